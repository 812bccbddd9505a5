//! The game's log lines for the console: a tracing layer keeps each line
//! (as filtered for the terminal, control characters taken out, at most
//! [`LOG_LINE_CHARS`] characters, the newest [`MAX_LINES`]) until the
//! console takes them into its scrollback.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bevy::log::BoxedLayer;
use bevy::prelude::*;

/// Longest log line kept, characters.
const LOG_LINE_CHARS: usize = 300;
/// Lines waiting for the console at most (its scrollback's length).
const MAX_LINES: usize = 1000;

/// The log lines the console shows: a tracing layer writes them (see
/// [`log_layer`]), the console takes them each frame.
#[derive(Resource, Default, Clone)]
pub(crate) struct GameLog(Arc<Mutex<VecDeque<String>>>);

/// A tracing layer that keeps the log's lines (as filtered for the
/// terminal) for the console's scrollback.
pub(crate) fn log_layer(app: &mut App) -> Option<BoxedLayer> {
    let log = GameLog::default();
    app.insert_resource(log.clone());
    Some(Box::new(log))
}

impl<S: bevy::log::tracing::Subscriber> bevy::log::tracing_subscriber::Layer<S> for GameLog {
    fn on_event(
        &self,
        event: &bevy::log::tracing::Event<'_>,
        _ctx: bevy::log::tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Message(String);
        impl bevy::log::tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &bevy::log::tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let level = *event.metadata().level();
        let text: String = match level {
            bevy::log::Level::ERROR | bevy::log::Level::WARN => format!("{level}: {}", message.0),
            _ => message.0,
        }
        .chars()
        .filter(|c| !c.is_control())
        .take(LOG_LINE_CHARS)
        .collect();
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() >= MAX_LINES {
                lines.pop_front();
            }
            lines.push_back(text);
        }
    }
}

impl GameLog {
    /// The lines logged since the last take.
    pub(crate) fn take_lines(&self) -> Vec<String> {
        self.0.lock().map(|mut lines| lines.drain(..).collect()).unwrap_or_default()
    }
}
