//! The heads-up display: a crosshair, hit markers (bigger and red for a head
//! shot, a kill; at the click when foreseen, and a struck-out grey one with
//! "no hit" when the server denies a foreseen hit), a red flash when hit,
//! health (in the mega's blue above 100), armour, ammunition and the quad's
//! seconds left, the verdicts of "show hitboxes", and a warning when the
//! server has gone quiet.

use arena_client::transport::UdpTransport;
use arena_client::{
    DamageTaken, Drawn, HitConfirmed, HitDenied, HitPredicted, LocalPlayer, NetcodeSettings, Session, ShotComparisons,
};
use arena_sim::HitZone;
use bevy::prelude::*;

use crate::hitboxes::verdict;
use crate::looks::{item_color, overlay_text};
use crate::vocabulary::ViewSet;

/// How long a hit marker shows, seconds.
const HIT_MARKER_S: f32 = 0.2;
/// How long a denied hit's marker shows, seconds: longer, so it is noticed.
const DENIED_MARKER_S: f32 = 1.0;
/// How long the damage flash lasts, seconds.
const DAMAGE_FLASH_S: f32 = 0.35;

/// Silence after which the HUD warns of a connection problem, seconds.
const QUIET_WARNING_S: f32 = 1.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Session::InGame), spawn_hud).add_systems(OnExit(Session::InGame), despawn_hud).add_systems(
        Update,
        (connection_warning, hit_marker, damage_flash, damage_arrows, vitals, verdicts, crosshair_for_players)
            .in_set(ViewSet::Overlay)
            .run_if(in_state(Session::InGame)),
    );
}

/// A bar of the crosshair: shown to players, not to watchers (who aim nothing).
#[derive(Component)]
struct Crosshair;

fn crosshair_for_players(roster: Res<arena_client::Roster>, mut bars: Query<&mut Visibility, With<Crosshair>>) {
    let shown = if roster.watching() { Visibility::Hidden } else { Visibility::Inherited };
    for mut bar in &mut bars {
        if *bar != shown {
            *bar = shown;
        }
    }
}

#[derive(Component)]
struct HitMarker {
    /// Seconds left on screen.
    left_s: f32,
}

/// "no hit" under the crosshair when a foreseen hit is denied.
#[derive(Component)]
struct DeniedLabel;

#[derive(Component)]
struct DamageFlash {
    left_s: f32,
}

/// The line of vitals: its parts are spans of one text, each in its colour.
#[derive(Component)]
struct Vitals;

/// One part of the vitals line.
#[derive(Component, Clone, Copy, PartialEq, Eq)]
enum Vital {
    /// Health (or what keeps the player from playing: the map loading, dead).
    Health,
    Armour,
    Weapon,
    Quad,
}

impl Vital {
    const ALL: [Vital; 4] = [Vital::Health, Vital::Armour, Vital::Weapon, Vital::Quad];
}

/// A red mark at the edge of the crosshair pointing towards whoever hit us.
#[derive(Component)]
struct DamageArrow {
    /// Where the shot came from.
    from: Vec3,
    left_s: f32,
}

/// How long a damage direction mark stays, seconds.
const DAMAGE_ARROW_S: f32 = 1.4;
/// Its distance from the screen's centre, pixels.
const DAMAGE_ARROW_RADIUS_PX: f32 = 90.0;

#[derive(Component)]
struct Verdicts;

#[derive(Component)]
struct Hud;

#[derive(Component)]
struct ConnectionWarning;

fn spawn_hud(mut commands: Commands) {
    let root = commands
        .spawn((
            Name::new("hud"),
            Hud,
            Node { width: percent(100), height: percent(100), position_type: PositionType::Absolute, ..default() },
        ))
        .id();
    // Crosshair: four short bars around a gap, with a dark outline so it reads
    // on bright and dark surfaces alike.
    let bar = |left: f32, top: f32, w: f32, h: f32| {
        (
            Node {
                position_type: PositionType::Absolute,
                left: Val::Percent(50.0),
                top: Val::Percent(50.0),
                margin: UiRect { left: px(left), top: px(top), ..default() },
                width: px(w),
                height: px(h),
                border: UiRect::all(px(1)),
                ..default()
            },
            BackgroundColor(Color::srgba(1.0, 1.0, 1.0, 0.9)),
            BorderColor::all(Color::srgba(0.0, 0.0, 0.0, 0.6)),
            ChildOf(root),
        )
    };
    for (left, top, w, h) in
        [(-13.0, -1.5, 9.0, 3.0), (4.0, -1.5, 9.0, 3.0), (-1.5, -13.0, 3.0, 9.0), (-1.5, 4.0, 3.0, 9.0)]
    {
        commands.spawn((bar(left, top, w, h), Crosshair));
    }
    // Hit marker: an X of four short bars around the centre.
    let marker = commands
        .spawn((
            HitMarker { left_s: 0.0 },
            Node {
                position_type: PositionType::Absolute,
                left: Val::Percent(50.0),
                top: Val::Percent(50.0),
                width: px(0),
                height: px(0),
                ..default()
            },
            Visibility::Hidden,
            ChildOf(root),
        ))
        .id();
    for (x, y, angle) in [(-1.0, -1.0, 45.0f32), (1.0, -1.0, -45.0), (-1.0, 1.0, -45.0), (1.0, 1.0, 45.0)] {
        commands.spawn((
            Node {
                position_type: PositionType::Absolute,
                left: px(x * 11.0 - 5.0),
                top: px(y * 11.0 - 1.5),
                width: px(10),
                height: px(3),
                ..default()
            },
            UiTransform::from_rotation(Rot2::degrees(angle)),
            BackgroundColor(Color::WHITE),
            ChildOf(marker),
        ));
    }
    commands.spawn((
        DeniedLabel,
        overlay_text("no hit", 15.0, Color::srgb(0.75, 0.75, 0.78), 1.5),
        Node {
            position_type: PositionType::Absolute,
            left: Val::Percent(50.0),
            top: Val::Percent(50.0),
            margin: UiRect { left: px(-20), top: px(22), ..default() },
            ..default()
        },
        Visibility::Hidden,
        ChildOf(root),
    ));
    commands.spawn((
        DamageFlash { left_s: 0.0 },
        Node { width: percent(100), height: percent(100), position_type: PositionType::Absolute, ..default() },
        BackgroundColor(Color::srgba(0.8, 0.0, 0.0, 0.0)),
        ChildOf(root),
    ));
    let vitals = commands
        .spawn((
            Vitals,
            overlay_text("", VITALS_PX, Color::WHITE, 2.0),
            Node { position_type: PositionType::Absolute, bottom: px(18), left: px(24), ..default() },
            ChildOf(root),
        ))
        .id();
    for part in Vital::ALL {
        commands.spawn((
            part,
            TextSpan::default(),
            TextFont { font_size: bevy::text::FontSize::Px(VITALS_PX), ..default() },
            TextColor(Color::WHITE),
            ChildOf(vitals),
        ));
    }
    commands.spawn((
        Verdicts,
        overlay_text("", 15.0, Color::srgb(0.85, 0.9, 1.0), 1.5),
        Node { position_type: PositionType::Absolute, top: percent(58), left: percent(53), ..default() },
        ChildOf(root),
    ));
    commands.spawn((
        ConnectionWarning,
        overlay_text("", 22.0, Color::srgb(1.0, 0.45, 0.35), 1.5),
        Node { position_type: PositionType::Absolute, top: px(16), left: px(16), ..default() },
        ChildOf(root),
    ));
}

fn despawn_hud(mut commands: Commands, huds: Query<Entity, With<Hud>>) {
    for hud in &huds {
        commands.entity(hud).despawn();
    }
}

fn connection_warning(transport: Option<Res<UdpTransport>>, mut text: Query<&mut Text, With<ConnectionWarning>>) {
    let quiet = transport.map(|t| t.server_silence().as_secs_f32()).unwrap_or(0.0);
    let message = if quiet > QUIET_WARNING_S {
        format!("Connection problem: nothing from the server for {quiet:.0} s")
    } else {
        String::new()
    };
    set_text(&mut text, &message);
}

/// What the hit marker shows, least important first: a denial corrects a
/// marker already shown, so it outranks a new hit; only a kill outranks it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Marked {
    Body,
    Head,
    Denied,
    Kill,
}

fn hit_marker(
    time: Res<Time>,
    mut foreseen: MessageReader<HitPredicted>,
    mut hits: MessageReader<HitConfirmed>,
    mut denied: MessageReader<HitDenied>,
    mut marker: Query<(&mut HitMarker, &mut Visibility, &Children), Without<DeniedLabel>>,
    mut label: Query<&mut Visibility, (With<DeniedLabel>, Without<HitMarker>)>,
    mut bars: Query<(&mut BackgroundColor, &mut UiTransform)>,
) {
    let Ok((mut marker, mut visibility, children)) = marker.single_mut() else { return };
    let zone = |zone: HitZone| if zone == HitZone::Head { Marked::Head } else { Marked::Body };
    // A foreseen hit at once; the server's hits that were not foreseen, and
    // kills, when it says so; denials. Of this frame's, the one that matters most.
    let marks = foreseen
        .read()
        .map(|f| zone(f.hit.zone))
        .chain(hits.read().filter(|h| h.is_news()).map(|h| if h.killed { Marked::Kill } else { zone(h.zone) }))
        .chain(denied.read().map(|_| Marked::Denied));
    if let Some(mark) = marks.max() {
        let denial = mark == Marked::Denied;
        marker.left_s = if denial { DENIED_MARKER_S } else { HIT_MARKER_S };
        let (color, size, turn) = match mark {
            Marked::Kill => (Color::srgb(1.0, 0.15, 0.1), 1.6, 0.0),
            Marked::Head => (Color::srgb(1.0, 0.35, 0.2), 1.3, 0.0),
            Marked::Body => (Color::WHITE, 1.0, 0.0),
            // Grey, and turned into a plus: not the hit that was shown.
            Marked::Denied => (Color::srgba(0.7, 0.7, 0.72, 0.9), 1.2, 45.0),
        };
        for (i, child) in children.iter().enumerate() {
            if let Ok((mut bar, mut transform)) = bars.get_mut(child) {
                bar.0 = color;
                transform.scale = Vec2::splat(size);
                let base = [45.0f32, -45.0, -45.0, 45.0][i % 4];
                transform.rotation = Rot2::degrees(base + turn);
            }
        }
        for mut shown in &mut label {
            *shown = if denial { Visibility::Inherited } else { Visibility::Hidden };
        }
    }
    marker.left_s -= time.delta_secs();
    let on = marker.left_s > 0.0;
    *visibility = if on { Visibility::Inherited } else { Visibility::Hidden };
    if !on {
        for mut shown in &mut label {
            *shown = Visibility::Hidden;
        }
    }
}

fn damage_flash(
    time: Res<Time>,
    mut damage: MessageReader<DamageTaken>,
    mut flash: Query<(&mut DamageFlash, &mut BackgroundColor)>,
) {
    let Ok((mut flash, mut color)) = flash.single_mut() else { return };
    if damage.read().count() > 0 {
        flash.left_s = DAMAGE_FLASH_S;
    }
    flash.left_s = (flash.left_s - time.delta_secs()).max(0.0);
    color.0 = Color::srgba(0.8, 0.0, 0.0, 0.35 * flash.left_s / DAMAGE_FLASH_S);
}

/// Text size of the vitals line, pixels.
const VITALS_PX: f32 = 28.0;
/// Armour's figure: a pale gold, apart from health's white.
const ARMOUR_COLOR: Color = Color::srgb(1.0, 0.85, 0.45);

/// What each part of the vitals line says, and in which colour.
fn vital_parts(state: &arena_sim::PlayerState, loading: bool) -> [(Vital, String, Color); 4] {
    let (health, armour, weapon, quad) = if loading {
        ("loading the map".to_string(), String::new(), String::new(), String::new())
    } else if !state.alive {
        ("dead: respawning".to_string(), String::new(), String::new(), String::new())
    } else {
        let weapon = if state.weapon == arena_sim::Weapon::Rocket {
            // No magazine: whether the next rocket is ready.
            if state.fire_cooldown_s > 0.05 {
                "[2] launcher  loading".to_string()
            } else {
                "[2] launcher  ready".to_string()
            }
        } else if state.reload_s > 0.0 {
            "[1] rifle  reloading".to_string()
        } else {
            format!("[1] rifle  {} / {}", state.ammo, arena_sim::weapon::MAGAZINE)
        };
        let protection = if state.protected_s > 0.0 { "   (spawn protection)" } else { "" };
        let armour = if state.armour > 0 { format!("   {} armour", state.armour) } else { String::new() };
        // Whole seconds, rounded up: it says 1 until it runs out.
        let quad = if state.quad_s > 0.0 { format!("   QUAD {}", state.quad_s.ceil() as u32) } else { String::new() };
        (format!("{} +", state.health), armour, format!("   {weapon}{protection}"), quad)
    };
    // Above 100 (the mega's, wearing off) in the mega's blue.
    let health_color = if state.alive && !loading && state.health > arena_sim::player::MAX_HEALTH {
        item_color(arena_sim::ItemKind::MegaHealth).mix(&Color::WHITE, 0.25)
    } else {
        Color::WHITE
    };
    let quad_color = item_color(arena_sim::ItemKind::QuadDamage).mix(&Color::WHITE, 0.2);
    [
        (Vital::Health, health, health_color),
        (Vital::Armour, armour, ARMOUR_COLOR),
        (Vital::Weapon, weapon, Color::WHITE),
        (Vital::Quad, quad, quad_color),
    ]
}

fn vitals(
    local: Query<&Drawn, With<LocalPlayer>>,
    fetch: Res<arena_client::MapFetch>,
    mut spans: Query<(&Vital, &mut TextSpan, &mut TextColor)>,
) {
    let Ok(Drawn(state)) = local.single() else { return };
    let parts = vital_parts(state, fetch.progress().is_some());
    for (part, mut span, mut color) in &mut spans {
        let Some((_, text, wanted)) = parts.iter().find(|(p, ..)| p == part) else { continue };
        // Touched only on a change, which lays the line out again.
        if span.0 != *text {
            span.0.clone_from(text);
        }
        color.set_if_neq(TextColor(*wanted));
    }
}

fn verdicts(
    settings: Res<NetcodeSettings>,
    comparisons: Res<ShotComparisons>,
    mut text: Query<&mut Text, With<Verdicts>>,
) {
    let lines: String = if settings.show_hitboxes {
        let recent: Vec<String> = comparisons.0.iter().rev().take(4).map(verdict).collect();
        if recent.is_empty() {
            String::new()
        } else {
            format!("red: as you saw it, blue: as the server tested it\n{}", recent.join("\n"))
        }
    } else {
        String::new()
    };
    set_text(&mut text, &lines);
}

/// Points at where each recent hit came from, turning as we turn.
fn damage_arrows(
    time: Res<Time>,
    mut damage: MessageReader<DamageTaken>,
    local: Query<&Drawn, With<LocalPlayer>>,
    input: Res<arena_client::LocalInput>,
    huds: Query<Entity, With<Hud>>,
    mut arrows: Query<(Entity, &mut DamageArrow, &mut UiTransform, &mut BackgroundColor)>,
    mut commands: Commands,
) {
    let me = local.single().ok().map(|d| d.0);
    if let Ok(hud) = huds.single() {
        for hit in damage.read() {
            // Placed at once: a frame at the centre would read as a hit marker.
            let transform = me.map(|me| arrow_transform(hit.from, &me, input.yaw)).unwrap_or_default();
            commands.spawn((
                DamageArrow { from: hit.from, left_s: DAMAGE_ARROW_S },
                Node {
                    position_type: PositionType::Absolute,
                    left: Val::Percent(50.0),
                    top: Val::Percent(50.0),
                    margin: UiRect { left: px(-30), top: px(-4), ..default() },
                    width: px(60),
                    height: px(8),
                    ..default()
                },
                transform,
                BackgroundColor(Color::srgba(1.0, 0.1, 0.05, 0.9)),
                ChildOf(hud),
            ));
        }
    }
    let Some(me) = me else { return };
    for (entity, mut arrow, mut transform, mut color) in &mut arrows {
        arrow.left_s -= time.delta_secs();
        if arrow.left_s <= 0.0 {
            commands.entity(entity).despawn();
            continue;
        }
        *transform = arrow_transform(arrow.from, &me, input.yaw);
        color.0 = Color::srgba(1.0, 0.1, 0.05, 0.9 * (arrow.left_s / DAMAGE_ARROW_S).min(1.0));
    }
}

/// Where a damage mark goes: on a circle round the crosshair, towards the
/// attacker (top: in front, bottom: behind), turning as we turn.
fn arrow_transform(from: Vec3, me: &arena_sim::PlayerState, yaw: f32) -> UiTransform {
    // The attacker's bearing relative to where we look: positive to the left.
    let to = from - me.pos;
    let bearing = arena_sim::cmd::wrap_angle(arena_sim::yaw_towards(to) - yaw);
    // On screen, clockwise from the top: left is negative.
    let angle = -bearing;
    let (sin, cos) = angle.sin_cos();
    UiTransform {
        translation: Val2::px(sin * DAMAGE_ARROW_RADIUS_PX, -cos * DAMAGE_ARROW_RADIUS_PX),
        rotation: Rot2::radians(angle),
        ..default()
    }
}

/// Sets these texts, touching them (and so re-laying them out) only on a change.
fn set_text<F: bevy::ecs::query::QueryFilter>(texts: &mut Query<&mut Text, F>, value: &str) {
    for mut text in texts.iter_mut() {
        if text.0 != value {
            value.clone_into(&mut text.0);
        }
    }
}
