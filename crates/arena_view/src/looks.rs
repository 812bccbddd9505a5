//! Looks several parts of the view share: the glowing unlit material of shot
//! effects and rockets, the shadowed text drawn over the view (HUD, name
//! tags, the area's name), and the colour each kind of item is known by.

use bevy::prelude::*;
use bevy::text::FontSize;

/// The shadow under text drawn over the view, at full opacity: white text
/// stays readable on the bright sky and on a lit wall alike.
pub(crate) const TEXT_SHADOW: Color = Color::srgba(0.0, 0.0, 0.0, 0.8);

/// A material that glows without light: `strength` times its colour (given
/// in sRGB) as emission, so bloom picks it up, and no shading, so it reads the
/// same in shadow.
pub(crate) fn glow(r: f32, g: f32, b: f32, strength: f32) -> StandardMaterial {
    StandardMaterial {
        base_color: Color::srgb(r, g, b),
        emissive: LinearRgba::rgb(r * strength, g * strength, b * strength),
        unlit: true,
        ..default()
    }
}

/// Text drawn over the view, `size_px` high, with a dark shadow `shadow_px`
/// down and to the right.
pub(crate) fn overlay_text(
    text: impl Into<String>,
    size_px: f32,
    color: Color,
    shadow_px: f32,
) -> (Text, TextFont, TextColor, TextShadow) {
    (
        Text::new(text),
        TextFont { font_size: FontSize::Px(size_px), ..default() },
        TextColor(color),
        TextShadow { offset: Vec2::splat(shadow_px), color: TEXT_SHADOW },
    )
}

/// The colour each kind of item is known by, wherever it shows: its model,
/// its ring and timer while it is away, the kill feed's line, the HUD's
/// figure it raises (health above 100 in the mega's blue, the quad's purple).
pub(crate) fn item_color(kind: arena_sim::ItemKind) -> Color {
    use arena_sim::ItemKind;
    match kind {
        ItemKind::Health => Color::srgb(0.3, 0.9, 0.4),
        // Orange, not yellow: told from the yellow armour at a glance.
        ItemKind::LargeHealth => Color::srgb(1.0, 0.6, 0.15),
        ItemKind::MegaHealth => Color::srgb(0.3, 0.6, 1.0),
        ItemKind::YellowArmour => Color::srgb(1.0, 0.86, 0.2),
        ItemKind::RedArmour => Color::srgb(0.95, 0.2, 0.15),
        ItemKind::QuadDamage => Color::srgb(0.68, 0.35, 1.0),
    }
}
