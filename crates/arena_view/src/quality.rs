//! The graphics quality setting applied: the sun's shadows (none, near, or
//! far in four cascades), multisampling, and the lamps (the call-outs', the
//! mega's and the quad's glows), chosen for the renderer when set to Auto (a
//! software renderer gets Medium: a game at two frames a second teaches
//! nothing about netcode).

use bevy::light::{CascadeShadowConfig, CascadeShadowConfigBuilder, DirectionalLightShadowMap};
use bevy::prelude::*;

use crate::callouts::AreaLamp;
use crate::scene::Sun;
use crate::settings::{Quality, Settings};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Renderer>()
        .add_systems(PostStartup, (find_renderer, apply_quality).chain())
        .add_systems(Update, apply_quality.run_if(resource_changed::<Settings>))
        .add_systems(PostUpdate, light_new_lamps);
}

/// Lamps put up after the quality was applied (a map's signs, built at the
/// first frame and again for another map) lit as the quality says.
fn light_new_lamps(
    settings: Res<Settings>,
    renderer: Res<Renderer>,
    mut lamps: Query<&mut Visibility, Added<AreaLamp>>,
) {
    let look = look(settings.quality.resolved(renderer.software));
    for mut visibility in &mut lamps {
        *visibility = if look.lamps { Visibility::Inherited } else { Visibility::Hidden };
    }
}

/// Whether the picture is drawn without a GPU (a virtual display, a VM).
#[derive(Resource, Default, Debug)]
struct Renderer {
    software: bool,
}

fn find_renderer(adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>, mut renderer: ResMut<Renderer>) {
    // wgpu's `DeviceType` is not re-exported by Bevy; its Debug name is stable.
    let Some(adapter) = adapter else { return };
    // WebGL 2 does not say the device's type: a browser drawing in
    // software (SwiftShader, llvmpipe) names it.
    renderer.software = format!("{:?}", adapter.0.device_type) == "Cpu"
        || ["SwiftShader", "llvmpipe"].iter().any(|name| adapter.0.name.contains(name));
    if renderer.software {
        info!("software rendering ({}): graphics quality Auto means Medium", adapter.0.name);
    }
}

/// Shadow cascades at most: WebGL 2 (a browser) draws one, which then
/// reaches as far as the four would.
const MAX_CASCADES: usize = if cfg!(target_arch = "wasm32") { 1 } else { 4 };

/// What one quality level turns on.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Look {
    shadows: bool,
    cascades: usize,
    shadow_distance_m: f32,
    shadow_map_px: usize,
    msaa: Msaa,
    lamps: bool,
}

fn look(level: Quality) -> Look {
    match level {
        Quality::Low => Look {
            shadows: false,
            cascades: 1,
            shadow_distance_m: 40.0,
            shadow_map_px: 512,
            msaa: Msaa::Off,
            lamps: false,
        },
        Quality::Medium => Look {
            shadows: true,
            cascades: 1,
            shadow_distance_m: 40.0,
            shadow_map_px: 1024,
            msaa: Msaa::Off,
            lamps: false,
        },
        Quality::High | Quality::Auto => Look {
            shadows: true,
            cascades: MAX_CASCADES,
            shadow_distance_m: 90.0,
            shadow_map_px: 2048,
            msaa: Msaa::Sample4,
            lamps: true,
        },
    }
}

fn apply_quality(
    settings: Res<Settings>,
    renderer: Res<Renderer>,
    mut commands: Commands,
    cameras: Query<Entity, With<Camera3d>>,
    mut suns: Query<(&mut DirectionalLight, &mut CascadeShadowConfig), With<Sun>>,
    mut lamps: Query<&mut Visibility, With<AreaLamp>>,
    mut applied: Local<Option<Quality>>,
) {
    let level = settings.quality.resolved(renderer.software);
    if *applied == Some(level) {
        return;
    }
    *applied = Some(level);
    let look = look(level);
    info!("graphics quality {} ({:?})", settings.quality.label(), level);
    for camera in &cameras {
        commands.entity(camera).insert(look.msaa);
    }
    for (mut sun, mut cascades) in &mut suns {
        sun.shadow_maps_enabled = look.shadows;
        *cascades = CascadeShadowConfigBuilder {
            num_cascades: look.cascades,
            first_cascade_far_bound: if look.cascades == 1 { look.shadow_distance_m } else { 12.0 },
            maximum_distance: look.shadow_distance_m,
            ..default()
        }
        .build();
    }
    commands.insert_resource(DirectionalLightShadowMap { size: look.shadow_map_px });
    for mut visibility in &mut lamps {
        *visibility = if look.lamps { Visibility::Inherited } else { Visibility::Hidden };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_costs_more_than_the_one_below() {
        let cost = |l: Look| (usize::from(l.shadows) * l.cascades * l.shadow_map_px, l.msaa.samples(), l.lamps);
        let [low, medium, high] = [Quality::Low, Quality::Medium, Quality::High].map(|q| cost(look(q)));
        assert!(low < medium && medium < high, "{low:?} {medium:?} {high:?}");
        assert_eq!(Quality::Auto.resolved(true), Quality::Medium);
        assert_eq!(Quality::Auto.resolved(false), Quality::High);
        assert_eq!(Quality::Low.resolved(false), Quality::Low);
    }
}
