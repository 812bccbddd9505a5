//! The settings window (from the main menu and the Esc menu): name, mouse,
//! field of view, volume, graphics quality, key bindings and the internet
//! masters the browser asks. Changes apply at once and are saved when the
//! window closes.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

#[cfg(not(target_arch = "wasm32"))]
use crate::settings::VOICE_VOLUME_RANGE;
use crate::settings::{Action, FOV_RANGE, Input, Quality, SENSITIVITY_RANGE, Settings, SettingsFile, parse_masters};
use crate::vocabulary::PlayerProfile;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SettingsWindow>()
        .add_systems(EguiPrimaryContextPass, show_settings)
        .add_systems(Update, capture_binding)
        .add_systems(Update, apply_volume.run_if(resource_changed::<Settings>));
}

/// Whether the settings window is open, and which action waits for a key.
#[derive(Resource, Default, Debug)]
pub(crate) struct SettingsWindow {
    pub open: bool,
    rebinding: Option<Action>,
    /// The frame the rebinding started: its own click does not count.
    rebinding_started: bool,
    /// Esc cancelled a rebinding this frame (so it does not close the window too).
    rebinding_cancelled: bool,
    /// The masters field as typed (the settings keep the names that parse).
    masters_text: Option<String>,
}

fn show_settings(
    mut contexts: EguiContexts,
    mut window: ResMut<SettingsWindow>,
    mut settings: ResMut<Settings>,
    mut profile: ResMut<PlayerProfile>,
    mut file: ResMut<SettingsFile>,
) -> Result {
    if !window.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    // Esc closes the window, unless it just cancelled a rebinding.
    if !std::mem::take(&mut window.rebinding_cancelled)
        && window.rebinding.is_none()
        && ctx.input(|i| i.key_pressed(egui::Key::Escape))
    {
        window.open = false;
    }
    let mut open = true;
    let mut edited = settings.clone();
    egui::Window::new("Settings")
        .open(&mut open)
        .resizable(false)
        .collapsible(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .show(ctx, |ui| {
            egui::Grid::new("settings").num_columns(2).spacing([12.0, 6.0]).show(ui, |ui| {
                ui.label("Name");
                ui.add(egui::TextEdit::singleline(&mut edited.name).char_limit(arena_protocol::MAX_NAME_CHARS));
                ui.end_row();
                ui.label("Mouse sensitivity");
                ui.add(egui::Slider::new(&mut edited.mouse_sensitivity, SENSITIVITY_RANGE).logarithmic(true));
                ui.end_row();
                ui.label("Invert mouse Y");
                ui.checkbox(&mut edited.invert_y, "");
                ui.end_row();
                ui.label("Field of view");
                ui.add(egui::Slider::new(&mut edited.fov_deg, FOV_RANGE).suffix("°"));
                ui.end_row();
                ui.label("Volume");
                ui.add(egui::Slider::new(&mut edited.volume, 0.0..=1.0));
                ui.end_row();
                ui.label("Graphics quality");
                egui::ComboBox::from_id_salt("quality").selected_text(edited.quality.label()).show_ui(ui, |ui| {
                    for quality in Quality::ALL {
                        ui.selectable_value(&mut edited.quality, quality, quality.label());
                    }
                });
                ui.end_row();
                ui.label("Kill-cam after a death");
                ui.checkbox(&mut edited.kill_cam, "");
                ui.end_row();
                // The page has no voice yet (`voice.rs` is the native game's).
                #[cfg(not(target_arch = "wasm32"))]
                voice_rows(ui, &mut edited);
                ui.label("Internet masters").on_hover_text(
                    "Server lists the browser's Internet tab asks, and that games you host are listed on \
                     when \"List on the internet\" is ticked: host names or addresses, with :port if not \
                     27950, separated by commas.",
                );
                let text = window.masters_text.get_or_insert_with(|| edited.masters.join(", "));
                let field = ui.add(
                    egui::TextEdit::singleline(text)
                        .hint_text("master.example.org, 203.0.113.5:27950")
                        .desired_width(260.0),
                );
                if field.changed() {
                    edited.masters = parse_masters(text).0;
                }
                ui.end_row();
            });
            ui.separator();
            ui.label("Keys (click, then press a key or mouse button; Esc cancels)");
            egui::Grid::new("bindings").num_columns(2).spacing([12.0, 4.0]).show(ui, |ui| {
                for action in Action::ALL {
                    ui.label(action.label());
                    let text = if window.rebinding == Some(action) {
                        "press a key…".to_string()
                    } else {
                        edited.input(action).name()
                    };
                    if ui.button(text).clicked() {
                        window.rebinding = Some(action);
                        window.rebinding_started = true;
                    }
                    ui.end_row();
                }
            });
            ui.separator();
            ui.horizontal(|ui| {
                if ui.button("Defaults").clicked() {
                    edited = Settings { name: edited.name.clone(), ..Settings::default() };
                    window.masters_text = None;
                }
                if ui.button("Done").clicked() {
                    window.open = false;
                }
            });
            if let Some(path) = &file.path {
                ui.label(egui::RichText::new(format!("Saved in {}", path.display())).small().weak());
            }
        });
    if edited != *settings {
        *settings = edited;
    }
    if !open || !window.open {
        window.open = false;
        window.rebinding = None;
        window.masters_text = None;
        let (clean, _) = settings.clone().repaired();
        profile.name = if clean.name.is_empty() { crate::vocabulary::default_name() } else { clean.name.clone() };
        file.save(&clean);
        if *settings != clean {
            *settings = clean;
        }
    }
    Ok(())
}

/// While an action waits for a key, the next key or mouse button pressed is bound to it.
fn capture_binding(
    mut window: ResMut<SettingsWindow>,
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    mut settings: ResMut<Settings>,
) {
    let Some(action) = window.rebinding else { return };
    if window.rebinding_started {
        // The click that started the rebinding is still in this frame's input.
        window.rebinding_started = false;
        return;
    }
    if keys.just_pressed(KeyCode::Escape) {
        window.rebinding = None;
        window.rebinding_cancelled = true;
        return;
    }
    let pressed = keys
        .get_just_pressed()
        .next()
        .map(|k| Input::Key(*k))
        .or_else(|| mouse.get_just_pressed().next().map(|b| Input::Mouse(*b)));
    if let Some(input) = pressed
        && Input::parse(&input.name()) == Some(input)
    {
        settings.bind(action, input);
        window.rebinding = None;
    }
}

/// Voice on or off, and its volume.
#[cfg(not(target_arch = "wasm32"))]
fn voice_rows(ui: &mut egui::Ui, edited: &mut Settings) {
    ui.label("Voice").on_hover_text(
        "Talk while the push-to-talk key is held (the microphone is open only then) and hear the \
         players the server lets you hear. Off: neither, and the server sends you none.",
    );
    ui.checkbox(&mut edited.voice, "");
    ui.end_row();
    ui.label("Voice volume");
    ui.add(egui::Slider::new(&mut edited.voice_volume, VOICE_VOLUME_RANGE));
    ui.end_row();
}

fn apply_volume(settings: Res<Settings>, mut volume: ResMut<GlobalVolume>) {
    volume.volume = bevy::audio::Volume::Linear(settings.volume);
}
