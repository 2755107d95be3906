//! Which client key a handoff item belongs to, without storing the key.
//!
//! An item's `client_key_id` is `k2_` and the first 16 bytes (hex) of
//! HMAC-SHA-256(store key, client key). The store key is 32 random bytes
//! made once per store and kept with it: `handoff-key-id.key` (hex, mode
//! 0600) in `state.data_dir` for the embedded store, `{prefix}handoff:key-id`
//! in Redis (written with `NX`, so every instance uses the first one). The
//! id is therefore stable across restarts, instances and toolchains, and
//! useless to whoever reads the store without the key.
//!
//! Items written before (by Spillway 0.1's `DefaultHasher`, whose output
//! std does not promise across Rust releases) keep their `k…` id: reading
//! accepts that id too ([`KeyIds::owns`]), so their client can still read
//! them, until retention deletes them. Nothing is rewritten.

use super::HandoffError;
use ring::hmac;
use std::hash::{Hash, Hasher};
use std::path::Path;

/// The name of the key file in `state.data_dir`.
pub const KEY_FILE: &str = "handoff-key-id.key";

/// Derives client key ids under one store's key.
pub struct KeyIds {
    key: hmac::Key,
}

impl std::fmt::Debug for KeyIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyIds(***)")
    }
}

impl KeyIds {
    /// Ids under `secret` (the store's 32 bytes).
    pub fn new(secret: &[u8]) -> Self {
        Self { key: hmac::Key::new(hmac::HMAC_SHA256, secret) }
    }

    /// The id of `client_key`.
    pub fn id(&self, client_key: &str) -> String {
        let tag = hmac::sign(&self.key, client_key.as_bytes());
        let mut out = String::from("k2_");
        out.push_str(&hex(tag.as_ref().get(..16).unwrap_or_default()));
        out
    }

    /// Whether an item stored with `stored` belongs to `client_key`: its id
    /// now, or the one items written before this scheme carry.
    pub fn owns(&self, stored: &str, client_key: &str) -> bool {
        stored == self.id(client_key) || stored == legacy_id(client_key)
    }

    /// The ids of the embedded store: its key file in `dir`, created on
    /// first use. Blocking: call it on the blocking pool.
    pub fn from_dir(dir: &Path) -> Result<Self, HandoffError> {
        let path = dir.join(KEY_FILE);
        let err = |what: &str, e: std::io::Error| HandoffError::Store(format!("{what} {}: {e}", path.display()));
        let text = match create_private(&path) {
            Ok(mut file) => {
                let text = hex(&new_secret());
                std::io::Write::write_all(&mut file, format!("{text}\n").as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| err("cannot write", e))?;
                text
            }
            // Another process (or an earlier run) made it: use that one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::read_to_string(&path).map_err(|e| err("cannot read", e))?
            }
            Err(e) => return Err(err("cannot create", e)),
        };
        Self::from_hex(text.trim())
            .ok_or_else(|| HandoffError::Store(format!("{} is not a key-id key (64 hex characters)", path.display())))
    }

    /// Ids under a key kept as hex (the file's or Redis's text).
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes = unhex(text)?;
        (bytes.len() == 32).then(|| Self::new(&bytes))
    }
}

/// A new store key, as the hex text kept in the store.
pub fn new_key_text() -> String {
    hex(&new_secret())
}

fn new_secret() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // Never on Linux. A weaker key only makes ids easier to link to a
        // guessed client key; they never grant anything by themselves.
        tracing::warn!("The OS random source failed; the handoff key-id key falls back to a fast PRNG.");
        bytes = std::array::from_fn(|_| fastrand::u8(..));
    }
    bytes
}

/// Creates `path` for writing, readable by its owner only; fails when it exists.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The id Spillway 0.1 gave a client key (std's SipHash with fixed keys).
/// Only read, never written.
pub fn legacy_id(key: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    format!("k{:016x}", h.finish())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// The owner of what virtual key `id` stores (responses, handoff items):
/// `key:` and the id, which stays the same when the key's limits change and
/// can never equal a plain key's HMAC id (those are hex).
pub fn key_owner(id: &str) -> String {
    format!("key:{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("spillway-keyid-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn ids_are_keyed_hmacs() {
        // RFC 4231 test case 2 ("Jefe"), first 16 bytes.
        let ids = KeyIds::new(b"Jefe");
        assert_eq!(ids.id("what do ya want for nothing?"), "k2_5bdcc146bf60754e6a042426089575c7");
        assert_ne!(ids.id("sk-a"), ids.id("sk-b"));
        assert_ne!(KeyIds::new(&[1; 32]).id("sk-a"), KeyIds::new(&[2; 32]).id("sk-a"), "another store, another id");
        assert!(!ids.id("sk-secret").contains("secret"));
    }

    #[test]
    fn the_key_file_is_made_once_private_and_reused() {
        let dir = temp_dir();
        let first = KeyIds::from_dir(&dir).unwrap().id("sk-a");
        assert_eq!(KeyIds::from_dir(&dir).unwrap().id("sk-a"), first, "stable across opens");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.join(KEY_FILE), "not hex\n").unwrap();
        assert!(KeyIds::from_dir(&dir).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn items_under_the_old_id_still_belong_to_their_key() {
        let ids = KeyIds::new(&[7; 32]);
        assert!(ids.owns(&legacy_id("sk-a"), "sk-a"));
        assert!(ids.owns(&ids.id("sk-a"), "sk-a"));
        assert!(!ids.owns(&legacy_id("sk-a"), "sk-b"));
        assert!(!ids.owns(&ids.id("sk-a"), "sk-b"));
    }
}
