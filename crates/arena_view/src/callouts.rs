//! The map's call-out areas made visible: each area's name on signs in its
//! colour (stencilled at start from a small built-in font), a band of that
//! colour along the outer walls it touches, a coloured lamp by each sign
//! (lit at the high quality setting), and on the HUD the name of the area
//! the player stands in, so that "two in North Ramp" means the same place
//! to everyone.

use arena_client::{ClientWorld, Drawn, LocalPlayer, Session};
use arena_sim::map::AreaDef;
use bevy::asset::RenderAssetUsages;
use bevy::image::{ImageSampler, ImageSamplerDescriptor};
use bevy::light::{NotShadowCaster, NotShadowReceiver};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};

use crate::looks::overlay_text;
use crate::vocabulary::ViewSet;

/// Height of a sign's letters, metres.
const LETTER_HEIGHT_M: f32 = 0.5;
/// Texels per font dot on a sign's texture.
const DOT_PX: u32 = 6;
/// Dots of margin around a sign's text.
const MARGIN_DOTS: u32 = 2;
/// The colour band on the outer walls: its height above the floor it runs
/// along, and how tall, metres.
const BAND_ABOVE_FLOOR_M: f32 = 1.0;
const BAND_HEIGHT_M: f32 = 0.35;
/// Where the map's outer walls' inner faces are, metres from the centre,
/// and how near an area's edge must come to one to run a band along it.
const OUTER_WALL_NEAR_M: f32 = 0.5;
/// A sign's lamp: how far in front of it, how bright (lumens), how far it reaches.
const LAMP_OUT_M: f32 = 0.8;
const LAMP_LUMENS: f32 = 60_000.0;
const LAMP_RANGE_M: f32 = 9.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, put_up_signs.run_if(resource_changed::<ClientWorld>))
        .add_systems(OnEnter(Session::InGame), spawn_area_label)
        .add_systems(OnExit(Session::InGame), despawn_area_label)
        .add_systems(Update, show_area.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)));
}

/// A sign's lamp (and an item's glow, `items`); shown at the high quality
/// setting only.
#[derive(Component)]
pub(crate) struct AreaLamp;

/// The HUD's line naming the area the player is in.
#[derive(Component)]
struct AreaLabel;

/// The 5 by 7 dots of a character (rows top to bottom, the low five bits
/// of each, the leftmost the highest); none for a space or anything else.
fn glyph(c: char) -> Option<[u8; 7]> {
    Some(match c.to_ascii_uppercase() {
        'A' => [0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11],
        'B' => [0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e],
        'C' => [0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e],
        'D' => [0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e],
        'E' => [0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f],
        'F' => [0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10],
        'G' => [0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f],
        'H' => [0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11],
        'I' => [0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f],
        'M' => [0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e],
        'P' => [0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10],
        'Q' => [0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d],
        'R' => [0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11],
        'S' => [0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e],
        'T' => [0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a],
        'X' => [0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04],
        'Z' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f],
        '0' => [0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e],
        '1' => [0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e],
        '2' => [0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f],
        '3' => [0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e],
        '4' => [0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02],
        '5' => [0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e],
        '6' => [0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e],
        '7' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e],
        '9' => [0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c],
        _ => return None,
    })
}

/// `text` in dots: a row-major grid of on/off, `6 * chars - 1` dots wide
/// (five a character and one between) and 7 high.
fn stencil(text: &str) -> (u32, Vec<bool>) {
    let chars: Vec<char> = text.chars().collect();
    let width = (chars.len() as u32 * 6).saturating_sub(1);
    let mut dots = vec![false; (width * 7) as usize];
    for (i, c) in chars.iter().enumerate() {
        let Some(rows) = glyph(*c) else { continue };
        for (y, row) in rows.iter().enumerate() {
            for x in 0..5u32 {
                if row & (0x10 >> x) != 0 {
                    dots[y * width as usize + i * 6 + x as usize] = true;
                }
            }
        }
    }
    (width, dots)
}

/// A sign's picture: the name in dark letters on the area's colour, with a
/// dark rim; and its size in dots (text and margins).
fn sign_image(name: &str, color: Color) -> (Image, UVec2) {
    let (text_w, dots) = stencil(name);
    let size = UVec2::new(text_w + 2 * MARGIN_DOTS, 7 + 2 * MARGIN_DOTS);
    let (w, h) = (size.x * DOT_PX, size.y * DOT_PX);
    let paint = color.to_srgba();
    let ink = [22u8, 22, 26, 255];
    let mut data = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            let rim = x < DOT_PX / 2 || y < DOT_PX / 2 || x >= w - DOT_PX / 2 || y >= h - DOT_PX / 2;
            let (dx, dy) = ((x / DOT_PX) as i64 - MARGIN_DOTS as i64, (y / DOT_PX) as i64 - MARGIN_DOTS as i64);
            let lettered =
                dx >= 0 && dy >= 0 && (dx as u32) < text_w && dy < 7 && dots[(dy as u32 * text_w + dx as u32) as usize];
            if rim || lettered {
                data.extend_from_slice(&ink);
            } else {
                let c = [paint.red, paint.green, paint.blue].map(|v| (v.clamp(0.0, 1.0) * 255.0) as u8);
                data.extend_from_slice(&[c[0], c[1], c[2], 255]);
            }
        }
    }
    let mut image = Image::new(
        Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.sampler = ImageSampler::Descriptor(ImageSamplerDescriptor::linear());
    (image, size)
}

fn area_color(area: &AreaDef) -> Color {
    Color::srgb(area.color.x, area.color.y, area.color.z)
}

/// The stretches of the outer walls an area touches: each the wall face's
/// middle point at floor level and its length, and the way into the arena.
fn wall_bands(area: &AreaDef, (min, max): (Vec3, Vec3)) -> Vec<(Vec3, f32, Vec3)> {
    // The blocks' bounds include the walls' thickness; their faces are a
    // wall's thickness in. The map's walls are 1 m thick.
    let (inner_min, inner_max) = (min + Vec3::ONE, max - Vec3::ONE);
    let near = |a: f32, b: f32| (a - b).abs() <= OUTER_WALL_NEAR_M;
    let (mid_x, mid_z) = ((area.min.x + area.max.x) * 0.5, (area.min.y + area.max.y) * 0.5);
    let (len_x, len_z) = (area.max.x - area.min.x, area.max.y - area.min.y);
    let mut bands = Vec::new();
    if near(area.min.y, inner_min.z) {
        bands.push((Vec3::new(mid_x, 0.0, inner_min.z), len_x, Vec3::Z));
    }
    if near(area.max.y, inner_max.z) {
        bands.push((Vec3::new(mid_x, 0.0, inner_max.z), len_x, Vec3::NEG_Z));
    }
    if near(area.min.x, inner_min.x) {
        bands.push((Vec3::new(inner_min.x, 0.0, mid_z), len_z, Vec3::X));
    }
    if near(area.max.x, inner_max.x) {
        bands.push((Vec3::new(inner_max.x, 0.0, mid_z), len_z, Vec3::NEG_X));
    }
    bands
}

/// The signs of the map the client world holds (put up again for another map).
#[derive(Component)]
struct Signs;

fn put_up_signs(
    mut commands: Commands,
    world: Res<ClientWorld>,
    up: Query<Entity, With<Signs>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut images: ResMut<Assets<Image>>,
) {
    let map = world.map();
    for old in &up {
        commands.entity(old).despawn();
    }
    let root = commands.spawn((Name::new("call-outs"), Signs, Transform::default(), Visibility::default())).id();
    let metres_per_dot = LETTER_HEIGHT_M / 7.0;
    for area in &map.areas {
        let color = area_color(area);
        let (image, dots) = sign_image(&area.name, color);
        let size = dots.as_vec2() * metres_per_dot;
        let material = materials.add(StandardMaterial {
            base_color_texture: Some(images.add(image)),
            // A little light of its own: readable in the shade.
            emissive: LinearRgba::from(color) * 0.25,
            perceptual_roughness: 0.6,
            ..default()
        });
        let mesh = meshes.add(Rectangle::new(size.x, size.y));
        for sign in &area.signs {
            // The quad faces +Z; turn that to the sign's facing.
            let facing = sign.facing();
            commands.spawn((
                Name::new(format!("sign {}", area.name)),
                Mesh3d(mesh.clone()),
                MeshMaterial3d(material.clone()),
                Transform::from_translation(sign.at).looking_to(-facing, Vec3::Y),
                NotShadowCaster,
                ChildOf(root),
            ));
            commands.spawn((
                Name::new(format!("lamp {}", area.name)),
                AreaLamp,
                PointLight {
                    color,
                    intensity: LAMP_LUMENS,
                    range: LAMP_RANGE_M,
                    shadow_maps_enabled: false,
                    ..default()
                },
                Transform::from_translation(sign.at + facing * LAMP_OUT_M + Vec3::Y * 0.6),
                Visibility::Hidden,
                ChildOf(root),
            ));
        }
        // The band along the outer walls, at the height of the floor there.
        let band = materials.add(StandardMaterial {
            base_color: color,
            emissive: LinearRgba::from(color) * 0.15,
            perceptual_roughness: 0.5,
            ..default()
        });
        for (at, length, inward) in wall_bands(area, map.bounds()) {
            let probe = at + inward * 0.5 + Vec3::Y * 10.0;
            let floor_y = world.cast_ray(probe, Vec3::NEG_Y, 20.0).map_or(0.0, |hit| probe.y - hit);
            let centre = at + inward * 0.02 + Vec3::Y * (floor_y + BAND_ABOVE_FLOOR_M + BAND_HEIGHT_M * 0.5);
            commands.spawn((
                Name::new(format!("band {}", area.name)),
                Mesh3d(meshes.add(Cuboid::new(length, BAND_HEIGHT_M, 0.02))),
                MeshMaterial3d(band.clone()),
                Transform::from_translation(centre).looking_to(-inward, Vec3::Y),
                NotShadowCaster,
                NotShadowReceiver,
                ChildOf(root),
            ));
        }
    }
}

fn spawn_area_label(mut commands: Commands) {
    commands.spawn((
        Name::new("area"),
        AreaLabel,
        overlay_text("", 18.0, Color::WHITE, 1.5),
        Node { position_type: PositionType::Absolute, bottom: px(56), left: px(24), ..default() },
    ));
}

fn despawn_area_label(mut commands: Commands, labels: Query<Entity, With<AreaLabel>>) {
    for label in &labels {
        commands.entity(label).despawn();
    }
}

fn show_area(
    world: Res<ClientWorld>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut labels: Query<(&mut Text, &mut TextColor), With<AreaLabel>>,
) {
    let Ok(Drawn(state)) = local.single() else { return };
    let area = world.map().area_at(state.pos).filter(|_| state.alive);
    for (mut text, mut color) in &mut labels {
        let name = area.map_or("", |a| a.name.as_str());
        if text.0 != name {
            text.0 = name.to_string();
        }
        if let Some(area) = area {
            color.0 = area_color(area).lighter(0.15);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        let (width, dots) = stencil(text);
        dots.chunks(width as usize)
            .map(|row| row.iter().map(|&on| if on { '#' } else { '.' }).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn names_are_stencilled_letter_by_letter() {
        assert_eq!(
            shown("MID"),
            [
                "#...#..###..####.",
                "##.##...#...#...#",
                "#.#.#...#...#...#",
                "#.#.#...#...#...#",
                "#...#...#...#...#",
                "#...#...#...#...#",
                "#...#..###..####.",
            ]
            .join("\n")
        );
        // Every name on the built-in map can be written: no letter missing.
        for area in &arena_sim::MapDef::foundry().areas {
            for c in area.name.chars().filter(|c| *c != ' ') {
                assert!(glyph(c).is_some(), "{c} in {}", area.name);
            }
        }
    }

    #[test]
    fn a_sign_is_the_name_on_the_areas_colour() {
        let (image, dots) = sign_image("NORTH RAMP", Color::srgb(0.2, 0.4, 0.9));
        assert_eq!(dots, UVec2::new(10 * 6 - 1 + 2 * MARGIN_DOTS, 7 + 2 * MARGIN_DOTS));
        assert_eq!((image.width(), image.height()), (dots.x * DOT_PX, dots.y * DOT_PX));
        let data = image.data.as_deref().unwrap_or_default();
        let ink = data.chunks(4).filter(|p| p[0] < 40 && p[2] < 40).count();
        let paint = data.chunks(4).filter(|p| p[2] > 200).count();
        assert!(ink > 0 && paint > ink, "ink {ink}, paint {paint}");
    }

    #[test]
    fn bands_run_along_the_outer_walls_an_area_touches() {
        let map = arena_sim::MapDef::foundry();
        let bounds = map.bounds();
        let by_name = |name: &str| map.areas.iter().find(|a| a.name == name).expect(name);
        // A corner touches two walls, a lane one, the middle none.
        assert_eq!(wall_bands(by_name("North Stairs"), bounds).len(), 2);
        assert_eq!(wall_bands(by_name("West Lane"), bounds).len(), 1);
        assert!(wall_bands(by_name("Mid"), bounds).is_empty());
        let (at, length, inward) = wall_bands(by_name("West Lane"), bounds)[0];
        assert_eq!((at.x, length, inward), (-30.0, 38.0, Vec3::X));
    }
}
