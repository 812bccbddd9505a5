//! The heads-up display: a crosshair, and a warning when the server has gone
//! quiet.

use arena_client::Session;
use arena_client::transport::UdpTransport;
use bevy::prelude::*;

use crate::ViewSet;

/// Silence after which the HUD warns of a connection problem, seconds.
const QUIET_WARNING_S: f32 = 1.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Session::InGame), spawn_hud)
        .add_systems(OnExit(Session::InGame), despawn_hud)
        .add_systems(Update, connection_warning.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)));
}

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
        commands.spawn(bar(left, top, w, h));
    }
    commands.spawn((
        ConnectionWarning,
        Text::new(""),
        TextFont { font_size: bevy::text::FontSize::Px(22.0), ..default() },
        TextColor(Color::srgb(1.0, 0.45, 0.35)),
        TextShadow { offset: Vec2::splat(1.5), color: Color::srgba(0.0, 0.0, 0.0, 0.8) },
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
    for mut text in &mut text {
        if text.0 != message {
            text.0.clone_from(&message);
        }
    }
}
