//! The arena's surfaces, made at start like the sounds: a texture for each
//! kind of surface (concrete slabs for the floor, block walls in running
//! bond, diamond-plate steel for platforms and ramps, wooden crates, banded
//! concrete pillars, hazard stripes on the parapets), each with a full mip
//! chain. Textures carry the detail; the materials carry each kind's tint.

use arena_sim::map::SurfaceKind;
use bevy::asset::RenderAssetUsages;
use bevy::image::{ImageAddressMode, ImageSampler, ImageSamplerDescriptor};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};

/// Texels along a texture's side (a power of two, for the mip chain).
const SIZE_PX: u32 = 256;
/// Size of one repeat of a world-mapped texture, metres.
pub(crate) const TILE_M: f32 = 4.0;

/// How a surface's texture is laid on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// In world metres, one repeat every [`TILE_M`], so patterns run on
    /// across neighbouring solids.
    World,
    /// Once on each face of the solid (a crate's boards fit its sides).
    PerFace,
}

/// A surface's look: its texture, how it is mapped, the tint and roughness.
pub(crate) struct Surface {
    pub image: Image,
    pub mapping: Mapping,
    pub tint: Color,
    pub roughness: f32,
    pub metallic: f32,
}

/// The look of `kind`. `small` is for solids no bigger than a crate (a
/// cover block that size is a crate; bigger, a concrete barrier).
pub(crate) fn surface(kind: SurfaceKind, small: bool) -> Surface {
    let (pixels, mapping, tint, roughness, metallic): (fn(u32, u32) -> [u8; 3], _, _, _, _) = match kind {
        SurfaceKind::Floor => (floor_slabs, Mapping::World, Color::srgb(0.78, 0.78, 0.8), 0.92, 0.0),
        SurfaceKind::Wall => (block_wall, Mapping::World, Color::srgb(0.9, 0.84, 0.76), 0.9, 0.0),
        SurfaceKind::Platform => (diamond_plate, Mapping::World, Color::srgb(0.62, 0.7, 0.8), 0.55, 0.5),
        SurfaceKind::Ramp => (diamond_plate, Mapping::World, Color::srgb(0.7, 0.76, 0.84), 0.55, 0.5),
        SurfaceKind::Cover if small => (crate_side, Mapping::PerFace, Color::WHITE, 0.85, 0.0),
        SurfaceKind::Cover => (block_wall, Mapping::World, Color::srgb(0.95, 0.62, 0.32), 0.85, 0.0),
        SurfaceKind::Pillar => (banded_concrete, Mapping::World, Color::srgb(0.88, 0.88, 0.9), 0.7, 0.0),
        SurfaceKind::Trim => (hazard_stripes, Mapping::World, Color::WHITE, 0.6, 0.0),
    };
    Surface { image: texture(pixels), mapping, tint, roughness, metallic }
}

/// A cheap, repeatable hash of a cell to 0..1.
fn hash(x: i32, y: i32, seed: u32) -> f32 {
    let mut h =
        (x as u32).wrapping_mul(0x8da6_b343) ^ (y as u32).wrapping_mul(0xd816_3841) ^ seed.wrapping_mul(0xcb1a_b31f);
    h ^= h >> 13;
    h = h.wrapping_mul(0x5bd1_e995);
    h ^= h >> 15;
    (h & 0xffff) as f32 / 65_535.0
}

/// Smooth value noise with a period of `cells` across the texture (so it
/// tiles), 0..1.
fn noise(x: u32, y: u32, cells: u32, seed: u32) -> f32 {
    let scale = SIZE_PX as f32 / cells as f32;
    let (fx, fy) = (x as f32 / scale, y as f32 / scale);
    let (x0, y0) = (fx.floor() as i32, fy.floor() as i32);
    let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
    let smooth = |t: f32| t * t * (3.0 - 2.0 * t);
    let at = |x: i32, y: i32| hash(x.rem_euclid(cells as i32), y.rem_euclid(cells as i32), seed);
    let top = at(x0, y0) + (at(x0 + 1, y0) - at(x0, y0)) * smooth(tx);
    let bottom = at(x0, y0 + 1) + (at(x0 + 1, y0 + 1) - at(x0, y0 + 1)) * smooth(tx);
    top + (bottom - top) * smooth(ty)
}

fn grey(v: f32) -> [u8; 3] {
    let v = (v.clamp(0.0, 1.0) * 255.0) as u8;
    [v, v, v]
}

fn rgb(c: [f32; 3]) -> [u8; 3] {
    c.map(|v| (v.clamp(0.0, 1.0) * 255.0) as u8)
}

/// Texels per metre of a world-mapped texture.
const PX_PER_M: u32 = (SIZE_PX as f32 / TILE_M) as u32;

/// Concrete slabs 2 m square with dark seams, each a little different, with
/// grain and faint stains.
fn floor_slabs(x: u32, y: u32) -> [u8; 3] {
    let slab = 2 * PX_PER_M;
    let (sx, sy) = (x % slab, y % slab);
    if sx < 2 || sy < 2 {
        return grey(0.42);
    }
    let tone = 0.78 + 0.08 * hash((x / slab) as i32, (y / slab) as i32, 1);
    let grain = 0.06 * (hash(x as i32, y as i32, 2) - 0.5);
    let stain = 0.1 * (noise(x, y, 8, 3) - 0.5) + 0.05 * (noise(x, y, 32, 4) - 0.5);
    grey(tone + grain + stain)
}

/// Concrete blocks 1 m by 0.5 m in running bond, with light mortar.
fn block_wall(x: u32, y: u32) -> [u8; 3] {
    let (w, h) = (PX_PER_M, PX_PER_M / 2);
    let row = y / h;
    let shifted = x + if row % 2 == 1 { w / 2 } else { 0 };
    if y % h < 2 || shifted % w < 2 {
        return grey(0.93);
    }
    let tone = 0.74 + 0.1 * hash((shifted / w) as i32, row as i32, 5);
    let pits = if hash(x as i32, y as i32, 6) > 0.97 { -0.12 } else { 0.0 };
    grey(tone + pits + 0.08 * (noise(x, y, 16, 7) - 0.5))
}

/// Steel tread plate: raised diamonds in a herringbone, on brushed steel.
fn diamond_plate(x: u32, y: u32) -> [u8; 3] {
    let cell = PX_PER_M / 4;
    let (cx, cy) = ((x % cell) as f32 / cell as f32 - 0.5, (y % cell) as f32 / cell as f32 - 0.5);
    // Alternate cells' diamonds lean either way.
    let flip = if (x / cell + y / cell).is_multiple_of(2) { 1.0 } else { -1.0 };
    let (u, v) = (cx + flip * cy, cx - flip * cy);
    let on_diamond = u.abs() < 0.32 && v.abs() < 0.08;
    let brushed = 0.04 * (hash(0, y as i32, 8) - 0.5) + 0.05 * (noise(x, y, 8, 9) - 0.5);
    if on_diamond {
        // Lit on one side, shaded on the other: it reads as raised.
        grey(0.8 + 0.15 * v.signum() * flip + brushed)
    } else {
        grey(0.6 + brushed)
    }
}

/// A wooden crate's side: a frame, horizontal boards, a diagonal brace.
fn crate_side(x: u32, y: u32) -> [u8; 3] {
    let (u, v) = (x as f32 / SIZE_PX as f32, y as f32 / SIZE_PX as f32);
    let frame = !(0.1..=0.9).contains(&u) || !(0.1..=0.9).contains(&v);
    let brace = ((u - v).abs() < 0.06) && !frame;
    let board = ((v * 6.0) as u32) % 6;
    let seam = (v * 6.0).fract() < 0.03;
    // Grain runs along the boards: noise stretched along x.
    let grain = noise(x / 8, y * 2 % SIZE_PX, 32, 10 + board) - 0.5;
    let wood = [0.62, 0.42, 0.22];
    let shade = if frame || brace {
        0.78 + 0.1 * grain
    } else if seam {
        0.45
    } else {
        0.9 + 0.18 * grain + 0.06 * (hash(board as i32, 0, 11) - 0.5)
    };
    let nail = (frame || brace) && ((u * 10.0).fract() - 0.5).abs() < 0.04 && ((v * 10.0).fract() - 0.5).abs() < 0.04;
    if nail { rgb([0.25, 0.24, 0.22]) } else { rgb(wood.map(|c| c * shade)) }
}

/// Smooth concrete with a darker band every metre (the formwork's joints).
fn banded_concrete(x: u32, y: u32) -> [u8; 3] {
    let band = y % PX_PER_M < 3;
    let tone = 0.8 + 0.1 * (noise(x, y, 16, 12) - 0.5) + 0.04 * (hash(x as i32, y as i32, 13) - 0.5);
    grey(if band { tone - 0.22 } else { tone })
}

/// Yellow and black diagonal stripes, a quarter metre wide, a little worn.
fn hazard_stripes(x: u32, y: u32) -> [u8; 3] {
    let stripe = ((x + y) / (PX_PER_M / 4)).is_multiple_of(2);
    let wear = noise(x, y, 32, 14);
    let shade = 0.85 + 0.15 * (hash(x as i32, y as i32, 15) - 0.5);
    if stripe && wear < 0.8 { rgb([0.95 * shade, 0.76 * shade, 0.1]) } else { rgb([0.09, 0.09, 0.09]) }
}

/// A square texture from a function of its texels, repeating, with mipmaps.
fn texture(pixels: fn(u32, u32) -> [u8; 3]) -> Image {
    let mut data = Vec::with_capacity((SIZE_PX * SIZE_PX * 4) as usize);
    for y in 0..SIZE_PX {
        for x in 0..SIZE_PX {
            let [r, g, b] = pixels(x, y);
            data.extend_from_slice(&[r, g, b, 255]);
        }
    }
    let mut image = Image::new(
        Extent3d { width: SIZE_PX, height: SIZE_PX, depth_or_array_layers: 1 },
        TextureDimension::D2,
        data.clone(),
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    // Mipmaps, box-filtered, so patterns fade evenly into the distance
    // instead of shimmering.
    let mut levels = mip_levels(&data, SIZE_PX);
    image.texture_descriptor.mip_level_count = levels.len() as u32;
    image.data = Some(levels.drain(..).flatten().collect());
    image.sampler = ImageSampler::Descriptor(ImageSamplerDescriptor {
        address_mode_u: ImageAddressMode::Repeat,
        address_mode_v: ImageAddressMode::Repeat,
        anisotropy_clamp: 8,
        ..ImageSamplerDescriptor::linear()
    });
    image
}

/// The full mip chain of a square RGBA8 image, level 0 first.
fn mip_levels(level0: &[u8], size: u32) -> Vec<Vec<u8>> {
    let mut levels = vec![level0.to_vec()];
    let mut size = size as usize;
    while size > 1 {
        let previous = levels.last().map(Vec::as_slice).unwrap_or_default();
        let half = size / 2;
        let mut next = Vec::with_capacity(half * half * 4);
        for y in 0..half {
            for x in 0..half {
                for channel in 0..4 {
                    let at =
                        |dx: usize, dy: usize| u32::from(previous[((2 * y + dy) * size + 2 * x + dx) * 4 + channel]);
                    next.push(((at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1) + 2) / 4) as u8);
                }
            }
        }
        levels.push(next);
        size = half;
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [SurfaceKind; 7] = [
        SurfaceKind::Floor,
        SurfaceKind::Wall,
        SurfaceKind::Platform,
        SurfaceKind::Cover,
        SurfaceKind::Pillar,
        SurfaceKind::Trim,
        SurfaceKind::Ramp,
    ];

    /// Mean and spread of a texture's level 0 luminance, 0..1.
    fn luminance(image: &Image) -> (f32, f32) {
        let data = image.data.as_deref().unwrap_or_default();
        let level0 = &data[..(SIZE_PX * SIZE_PX * 4) as usize];
        let l: Vec<f32> =
            level0.chunks(4).map(|p| (0.3 * p[0] as f32 + 0.59 * p[1] as f32 + 0.11 * p[2] as f32) / 255.0).collect();
        let mean = l.iter().sum::<f32>() / l.len() as f32;
        let spread = (l.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / l.len() as f32).sqrt();
        (mean, spread)
    }

    #[test]
    fn every_surface_has_a_full_mip_chain_and_visible_detail() {
        for kind in KINDS {
            for small in [false, true] {
                let s = surface(kind, small);
                let levels = SIZE_PX.ilog2() + 1;
                assert_eq!(s.image.texture_descriptor.mip_level_count, levels, "{kind:?}");
                let expected: usize = (0..levels).map(|l| ((SIZE_PX >> l).pow(2) * 4) as usize).sum();
                assert_eq!(s.image.data.as_ref().map(Vec::len), Some(expected), "{kind:?}");
                let (mean, spread) = luminance(&s.image);
                // Neither black nor blown out, and not flat.
                assert!((0.25..0.9).contains(&mean), "{kind:?}: mean {mean}");
                assert!(spread > 0.03, "{kind:?}: spread {spread}");
            }
        }
    }

    #[test]
    fn world_textures_tile_without_a_seam() {
        // Going from the last column (row) to the first changes as much as
        // going across the middle, at the same place in every pattern's
        // period (the periods divide the texture): no seam where it repeats.
        let step =
            |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).map(|(x, y)| (i32::from(*x) - i32::from(y)).abs()).sum::<i32>();
        let (last, middle) = (SIZE_PX - 1, SIZE_PX / 2);
        for (name, pixels) in [
            ("floor", floor_slabs as fn(u32, u32) -> [u8; 3]),
            ("wall", block_wall),
            ("plate", diamond_plate),
            ("pillar", banded_concrete),
            ("stripes", hazard_stripes),
        ] {
            for (axis, at) in
                [("columns", (|a: u32, i: u32| (a, i)) as fn(u32, u32) -> (u32, u32)), ("rows", |a, i| (i, a))]
            {
                let texel = |a: u32, i: u32| {
                    let (x, y) = at(a, i);
                    pixels(x, y)
                };
                let across: i32 = (0..SIZE_PX).map(|i| step(texel(last, i), texel(0, i))).sum();
                let inside: i32 = (0..SIZE_PX).map(|i| step(texel(middle - 1, i), texel(middle, i))).sum();
                let allowed = across.max(inside) / 4 + 4000;
                assert!(
                    (across - inside).abs() <= allowed,
                    "{name} {axis}: {across} across the repeat, {inside} inside"
                );
            }
        }
    }
}
