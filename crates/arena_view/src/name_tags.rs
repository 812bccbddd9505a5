//! Name tags over other players that stay readable: shown only while some of
//! the body can be seen (a wall hides the tag as it hides the body), fading
//! out with distance, never crowding: the nearest player's tag goes where it
//! belongs, farther ones step up above it or give way, and none is pushed
//! to the screen's edge for a body that is off the screen.

use arena_client::{ClientWorld, Drawn, LocalPlayer, NetPlayer, PlayerName, Roster};
use arena_sim::Hitbox;
use bevy::prelude::*;

use crate::camera::MainCamera;
use crate::looks::{TEXT_SHADOW, overlay_text};
use crate::vocabulary::{KillCamShown, ViewSet, roster_color};

/// Nearer than this a tag is fully opaque, metres.
const NAME_TAG_FULL_M: f32 = 18.0;
/// Farther than this no tag is shown (it has faded out), metres.
const NAME_TAG_RANGE_M: f32 = 55.0;
/// Height of the tag's bottom above the top of the head, metres.
const NAME_TAG_LIFT_M: f32 = 0.3;
/// Space kept between two tags and between a tag and the screen's edge, pixels.
const TAG_GAP_PX: f32 = 2.0;
/// How many times a tag may step up over nearer ones before it gives way.
const MAX_TAG_STEPS: usize = 2;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (tag_new_players, despawn_orphan_tags, update_name_tag_text, mark_talkers, colour_name_tags, place_name_tags)
            .chain()
            .in_set(ViewSet::Overlay),
    );
}

/// A name tag, a UI node that follows a player on screen.
#[derive(Component)]
struct NameTag {
    player: Entity,
}

/// On a player: its name tag.
#[derive(Component)]
struct TaggedBy(Entity);

fn tag_new_players(
    mut commands: Commands,
    new: Query<(Entity, &PlayerName), (With<NetPlayer>, Without<LocalPlayer>, Without<TaggedBy>)>,
) {
    for (player, name) in &new {
        let tag = commands
            .spawn((
                Name::new("name tag"),
                NameTag { player },
                overlay_text(name.0.clone(), 16.0, Color::WHITE, 1.5),
                Node { position_type: PositionType::Absolute, ..default() },
                Visibility::Hidden,
            ))
            .id();
        commands.entity(player).insert(TaggedBy(tag));
    }
}

fn update_name_tag_text(
    names: Query<(&PlayerName, &TaggedBy), Changed<PlayerName>>,
    mut texts: Query<&mut Text, With<NameTag>>,
) {
    for (name, tag) in &names {
        if let Ok(mut text) = texts.get_mut(tag.0) {
            text.0.clone_from(&name.0);
        }
    }
}

/// A talking player's tag between sound marks: "((( Ada )))" (not in the
/// browser's build, which has no voice).
fn mark_talkers(
    #[cfg(not(target_arch = "wasm32"))] voice: Option<Res<arena_client::voice::VoiceStats>>,
    players: Query<(&NetPlayer, &PlayerName, &TaggedBy)>,
    mut texts: Query<&mut Text, With<NameTag>>,
) {
    #[cfg(not(target_arch = "wasm32"))]
    let talking = |id| voice.as_ref().is_some_and(|v| v.talking.contains(&id));
    #[cfg(target_arch = "wasm32")]
    let talking = |_| false;
    for (player, name, tag) in &players {
        let Ok(mut text) = texts.get_mut(tag.0) else { continue };
        let wanted = if talking(player.id) { format!("((( {} )))", name.0) } else { name.0.clone() };
        if text.0 != wanted {
            text.0 = wanted;
        }
    }
}

/// Tags in their player's team colour (white without teams), keeping the
/// fade `place_name_tags` gives them.
fn colour_name_tags(
    // Absent in a demo's playback, which has no connection: white tags.
    roster: Option<Res<Roster>>,
    players: Query<(&NetPlayer, &TaggedBy)>,
    mut colours: Query<&mut TextColor, With<NameTag>>,
) {
    let Some(roster) = roster else { return };
    for (player, tag) in &players {
        let Ok(mut colour) = colours.get_mut(tag.0) else { continue };
        let wanted = match roster.side(player.id).team() {
            Some(_) => roster_color(&roster, player.id).mix(&Color::WHITE, 0.35),
            None => Color::WHITE,
        }
        .with_alpha(colour.0.alpha());
        if colour.0 != wanted {
            colour.0 = wanted;
        }
    }
}

/// Removes the name tag when its player goes away.
fn despawn_orphan_tags(mut commands: Commands, tags: Query<(Entity, &NameTag)>, players: Query<(), With<NetPlayer>>) {
    for (entity, tag) in &tags {
        if players.get(tag.player).is_err() {
            commands.entity(entity).despawn();
        }
    }
}

/// How opaque a tag is at `distance` metres: full up close, fading to
/// nothing at [`NAME_TAG_RANGE_M`].
fn tag_alpha(distance: f32) -> f32 {
    ((NAME_TAG_RANGE_M - distance) / (NAME_TAG_RANGE_M - NAME_TAG_FULL_M)).clamp(0.0, 1.0)
}

/// A tag wanting a place: the point on screen its bottom centre belongs at
/// (over the head) and its size, pixels.
#[derive(Clone, Copy, Debug)]
struct WantedTag {
    anchor: Vec2,
    size: Vec2,
}

/// A placed tag's rectangle, pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TagRect {
    min: Vec2,
    max: Vec2,
}

impl TagRect {
    fn overlaps(&self, other: &TagRect) -> bool {
        self.min.x < other.max.x + TAG_GAP_PX
            && other.min.x < self.max.x + TAG_GAP_PX
            && self.min.y < other.max.y + TAG_GAP_PX
            && other.min.y < self.max.y + TAG_GAP_PX
    }
}

/// Places tags, nearest first (`wanted` is in that order), on a screen of
/// `screen` pixels: each centred over its head, moved sideways only to stay
/// whole on the screen; a tag that would cover a nearer one steps up above
/// it (at most [`MAX_TAG_STEPS`] times) or, still crowded or pushed off the
/// top, is not shown. A head off the screen shows no tag.
fn lay_out_tags(wanted: &[WantedTag], screen: Vec2) -> Vec<Option<TagRect>> {
    let mut placed: Vec<TagRect> = Vec::with_capacity(wanted.len());
    wanted
        .iter()
        .map(|tag| {
            let on_screen =
                tag.anchor.x >= 0.0 && tag.anchor.x <= screen.x && tag.anchor.y >= 0.0 && tag.anchor.y <= screen.y;
            if !on_screen || tag.size.x > screen.x {
                return None;
            }
            let left = (tag.anchor.x - tag.size.x * 0.5)
                .clamp(TAG_GAP_PX, (screen.x - tag.size.x - TAG_GAP_PX).max(TAG_GAP_PX));
            let mut rect = TagRect {
                min: Vec2::new(left, tag.anchor.y - tag.size.y),
                max: Vec2::new(left + tag.size.x, tag.anchor.y),
            };
            let mut steps = 0;
            while let Some(nearer) = placed.iter().find(|p| p.overlaps(&rect)) {
                if steps == MAX_TAG_STEPS {
                    return None;
                }
                let up = rect.max.y - (nearer.min.y - TAG_GAP_PX);
                rect.min.y -= up;
                rect.max.y -= up;
                steps += 1;
            }
            if rect.min.y < TAG_GAP_PX {
                return None;
            }
            placed.push(rect);
            Some(rect)
        })
        .collect()
}

fn place_name_tags(
    camera: Query<(&Camera, &Transform), With<MainCamera>>,
    world: Res<ClientWorld>,
    players: Query<&Drawn>,
    mut tags: Query<(Entity, &NameTag, &mut Node, &mut Visibility, &ComputedNode, &mut TextColor, &mut TextShadow)>,
    kill_cam: Option<Res<KillCamShown>>,
) {
    // The kill-cam shows the past: no tags over the present's players.
    if kill_cam.is_some_and(|k| k.playing.is_some()) {
        for (_, _, _, mut visibility, ..) in &mut tags {
            *visibility = Visibility::Hidden;
        }
        return;
    }
    let Ok((camera, transform)) = camera.single() else { return };
    // This frame's camera (it has no parent): its global transform is last
    // frame's until propagation, and at a few frames a second the view turns
    // a long way in between.
    let camera_transform = &GlobalTransform::from(*transform);
    let Some(screen) = camera.logical_viewport_size() else { return };
    let eye = camera_transform.translation();
    let seen = |point: Vec3| {
        let to = point - eye;
        let distance = to.length();
        distance < 1e-3 || world.cast_ray(eye, to / distance, distance).is_none()
    };
    // Who wants a tag, nearest first.
    let mut wanted: Vec<(Entity, f32, WantedTag)> = Vec::new();
    for (entity, tag, _, mut visibility, computed, _, _) in &mut tags {
        *visibility = Visibility::Hidden;
        let Ok(Drawn(state)) = players.get(tag.player) else { continue };
        let anchor = state.pos + Vec3::Y * (state.height() + NAME_TAG_LIFT_M);
        let distance = anchor.distance(eye);
        if !state.alive || distance >= NAME_TAG_RANGE_M {
            continue;
        }
        // Hidden as the body is: shown while the head, the chest or the
        // hips can be seen (the space over a low wall does not count).
        let pose = Hitbox::of(state).pose();
        if ![pose.head, pose.chest, pose.pelvis].into_iter().any(seen) {
            continue;
        }
        let Ok(point) = camera.world_to_viewport(camera_transform, anchor) else { continue };
        let size = computed.size() * computed.inverse_scale_factor();
        wanted.push((entity, distance, WantedTag { anchor: point, size }));
    }
    wanted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let places = lay_out_tags(&wanted.iter().map(|w| w.2).collect::<Vec<_>>(), screen);
    for ((entity, distance, _), place) in wanted.into_iter().zip(places) {
        let Some(rect) = place else { continue };
        let Ok((_, _, mut node, mut visibility, _, mut color, mut shadow)) = tags.get_mut(entity) else { continue };
        node.left = px(rect.min.x);
        node.top = px(rect.min.y);
        let alpha = tag_alpha(distance);
        color.0.set_alpha(alpha);
        shadow.color.set_alpha(TEXT_SHADOW.alpha() * alpha);
        *visibility = Visibility::Inherited;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Vec2 = Vec2::new(1280.0, 720.0);
    const SIZE: Vec2 = Vec2::new(100.0, 20.0);

    fn at(x: f32, y: f32) -> WantedTag {
        WantedTag { anchor: Vec2::new(x, y), size: SIZE }
    }

    fn apart(rects: &[Option<TagRect>]) -> bool {
        let shown: Vec<&TagRect> = rects.iter().flatten().collect();
        shown.iter().enumerate().all(|(i, a)| shown[i + 1..].iter().all(|b| !a.overlaps(b)))
    }

    #[test]
    fn a_lone_tag_sits_centred_over_the_head() {
        let rect = lay_out_tags(&[at(640.0, 300.0)], SCREEN)[0].expect("shown");
        assert_eq!(rect, TagRect { min: Vec2::new(590.0, 280.0), max: Vec2::new(690.0, 300.0) });
    }

    #[test]
    fn a_crowd_never_overlaps_and_the_nearest_keeps_its_place() {
        // Ten players in a huddle, nearest first.
        let crowd: Vec<WantedTag> =
            (0..10).map(|i| at(640.0 + (i % 3) as f32 * 20.0, 300.0 + (i % 2) as f32 * 8.0)).collect();
        let rects = lay_out_tags(&crowd, SCREEN);
        assert!(apart(&rects), "{rects:?}");
        assert_eq!(rects[0], lay_out_tags(&crowd[..1], SCREEN)[0], "the nearest is where it belongs");
        // A couple step up; the rest give way rather than stack to the sky.
        let shown = rects.iter().flatten().count();
        assert!((2..=MAX_TAG_STEPS + 1).contains(&shown), "{shown} shown");
    }

    #[test]
    fn tags_at_the_edges_stay_whole_and_off_screen_heads_have_none() {
        let rects = lay_out_tags(
            &[at(5.0, 300.0), at(1278.0, 300.0), at(-30.0, 300.0), at(1400.0, 300.0), at(640.0, -5.0), at(640.0, 10.0)],
            SCREEN,
        );
        let left = rects[0].expect("near the left edge: shown");
        let right = rects[1].expect("near the right edge: shown");
        assert!(left.min.x >= TAG_GAP_PX && right.max.x <= SCREEN.x - TAG_GAP_PX, "{left:?} {right:?}");
        assert_eq!(&rects[2..5], &[None, None, None], "heads off the screen");
        assert_eq!(rects[5], None, "a tag that would stick out of the top");
        // Two players side by side at the left edge: the farther one steps up, not under.
        let both = lay_out_tags(&[at(0.0, 300.0), at(20.0, 300.0)], SCREEN);
        assert!(apart(&both) && both.iter().all(Option::is_some), "{both:?}");
    }

    #[test]
    fn tags_fade_with_distance() {
        assert_eq!(tag_alpha(5.0), 1.0);
        assert_eq!(tag_alpha(NAME_TAG_FULL_M), 1.0);
        let half = tag_alpha((NAME_TAG_FULL_M + NAME_TAG_RANGE_M) * 0.5);
        assert!((half - 0.5).abs() < 1e-4, "{half}");
        assert_eq!(tag_alpha(NAME_TAG_RANGE_M), 0.0);
        assert!(tag_alpha(30.0) > tag_alpha(40.0));
    }
}
