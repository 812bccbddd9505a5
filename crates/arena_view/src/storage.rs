//! Where the view's files live (the settings, the console's scripts such as
//! `autoexec.cfg`): the file system natively; in a browser, the page's
//! localStorage, one entry per path (its key `arena:` and the path), so
//! that the same rules read, check, set aside and replace them in both.

use std::io;
use std::path::{Path, PathBuf};

/// The folder the settings and scripts are in, in a browser's storage.
#[cfg(target_arch = "wasm32")]
pub(crate) const WEB_CONFIG_DIR: &str = "/arena";

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;

    pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    pub(crate) fn len(path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    pub(crate) fn is_file(path: &Path) -> bool {
        path.is_file()
    }

    pub(crate) fn write(path: &Path, text: &str) -> io::Result<()> {
        std::fs::write(path, text)
    }

    pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    /// The names of the files directly in `dir`.
    pub(crate) fn file_names(dir: &Path) -> io::Result<Vec<String>> {
        Ok(std::fs::read_dir(dir)?.filter_map(Result::ok).filter_map(|e| e.file_name().into_string().ok()).collect())
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;

    /// Key prefix of Arena's entries (other pages of the same origin may
    /// keep their own).
    const PREFIX: &str = "arena:";

    fn storage() -> io::Result<web_sys::Storage> {
        web_sys::window().and_then(|w| w.local_storage().ok().flatten()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::Unsupported, "this browser keeps no local storage for the page")
        })
    }

    fn key(path: &Path) -> String {
        format!("{PREFIX}{}", path.display())
    }

    fn failed(what: &str, e: web_sys::wasm_bindgen::JsValue) -> io::Error {
        io::Error::other(format!("{what}: {}", e.as_string().unwrap_or_else(|| format!("{e:?}"))))
    }

    pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
        storage()?
            .get_item(&key(path))
            .map_err(|e| failed("storage refused the read", e))?
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    pub(crate) fn len(path: &Path) -> io::Result<u64> {
        Ok(read_to_string(path)?.len() as u64)
    }

    pub(crate) fn is_file(path: &Path) -> bool {
        read_to_string(path).is_ok()
    }

    /// Fails, with the browser's reason, when the storage is full (about
    /// 5 MB an origin) or refused (private modes).
    pub(crate) fn write(path: &Path, text: &str) -> io::Result<()> {
        storage()?.set_item(&key(path), text).map_err(|e| failed("storage refused the write", e))
    }

    pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
        let text = read_to_string(from)?;
        write(to, &text)?;
        storage()?.remove_item(&key(from)).map_err(|e| failed("storage refused the removal", e))
    }

    /// Folders need no making in a key-value store.
    pub(crate) fn create_dir_all(_: &Path) -> io::Result<()> {
        storage().map(|_| ())
    }

    pub(crate) fn file_names(dir: &Path) -> io::Result<Vec<String>> {
        let storage = storage()?;
        let inside = format!("{}/", key(dir));
        let count = storage.length().map_err(|e| failed("storage refused the listing", e))?;
        Ok((0..count)
            .filter_map(|i| storage.key(i).ok().flatten())
            .filter_map(|k| k.strip_prefix(&inside).map(str::to_string))
            .filter(|name| !name.contains('/'))
            .collect())
    }
}

pub(crate) use imp::{create_dir_all, file_names, is_file, len, read_to_string, rename, write};

/// Where the settings and scripts are: natively the platform's folder
/// (`settings::config_dir`), in a browser the storage's own.
pub(crate) fn web_or(native: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = native;
        Some(PathBuf::from(WEB_CONFIG_DIR))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        native()
    }
}
