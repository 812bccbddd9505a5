//! The peers a master's TURN relay admits, kept in coturn's own SQLite
//! user database (`--userdb`): coturn runs with every peer denied
//! (`denied-peer-ip=0.0.0.0-255.255.255.255` and the IPv6 whole) and reads
//! the table `allowed_peer_ip` again every few seconds, so the listed
//! servers' addresses written there are the only peers a player's relayed
//! address can reach. A player holding real credentials cannot make the
//! relay send to anyone else: not a private address, not the master, not a
//! server that is not listed.
//!
//! The writes happen on a thread of their own (a slow disk must not hold
//! the master's socket loop); only the newest set waits to be written.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use bevy::log::{info, warn};

/// How long a write waits for coturn's own lock on the database.
const BUSY_WAIT: Duration = Duration::from_secs(2);

/// Why the relay's database cannot be kept.
#[derive(Debug)]
pub(crate) enum PeersDbError {
    Open(PathBuf, rusqlite::Error),
    /// No `allowed_peer_ip` table: not coturn's database.
    NotCoturn(PathBuf),
}

impl std::fmt::Display for PeersDbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeersDbError::Open(path, e) => write!(f, "cannot open coturn's database {}: {e}", path.display()),
            PeersDbError::NotCoturn(path) => write!(
                f,
                "{} has no table allowed_peer_ip: is it coturn's user database (turnserver --userdb)? \
                 Debian makes one at /var/lib/turn/turndb",
                path.display()
            ),
        }
    }
}

/// Opens coturn's database at `path` and checks that it is one.
fn open(path: &Path) -> Result<rusqlite::Connection, PeersDbError> {
    let db = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| PeersDbError::Open(path.to_owned(), e))?;
    db.busy_timeout(BUSY_WAIT).map_err(|e| PeersDbError::Open(path.to_owned(), e))?;
    let tables: i64 = db
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'allowed_peer_ip'", [], |row| {
            row.get(0)
        })
        .map_err(|e| PeersDbError::Open(path.to_owned(), e))?;
    if tables == 0 {
        return Err(PeersDbError::NotCoturn(path.to_owned()));
    }
    Ok(db)
}

/// Replaces the rows of `realm` with `peers`, in one transaction (coturn
/// never reads half a list).
fn write(db: &mut rusqlite::Connection, realm: &str, peers: &BTreeSet<IpAddr>) -> rusqlite::Result<()> {
    let tx = db.transaction()?;
    tx.execute("DELETE FROM allowed_peer_ip WHERE realm = ?1", [realm])?;
    {
        let mut insert = tx.prepare("INSERT OR IGNORE INTO allowed_peer_ip (realm, ip_range) VALUES (?1, ?2)")?;
        for ip in peers {
            insert.execute((realm, ip.to_string()))?;
        }
    }
    tx.commit()
}

/// Starts the writer for the database at `path` (checked now, so that a
/// wrong path stops the master at start); returns where to send each new
/// set of peers.
pub(crate) fn start(path: &Path, realm: String) -> Result<Sender<BTreeSet<IpAddr>>, PeersDbError> {
    let mut db = open(path)?;
    // Nobody is listed yet: no peer until a server proves itself.
    if let Err(e) = write(&mut db, &realm, &BTreeSet::new()) {
        return Err(PeersDbError::Open(path.to_owned(), e));
    }
    let (tx, rx) = mpsc::channel::<BTreeSet<IpAddr>>();
    let shown = path.display().to_string();
    std::thread::Builder::new()
        .name("arena-relay-peers".into())
        .spawn(move || keep(&mut db, &realm, &rx, &shown))
        .map_err(|e| PeersDbError::Open(path.to_owned(), rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
    Ok(tx)
}

/// The writer's loop: the newest set each time, a line when it fails and
/// when it works again (not one per write).
fn keep(db: &mut rusqlite::Connection, realm: &str, rx: &Receiver<BTreeSet<IpAddr>>, shown: &str) {
    let mut failing = false;
    while let Ok(mut peers) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            peers = newer;
        }
        match write(db, realm, &peers) {
            Ok(()) if failing => {
                failing = false;
                info!("relay: {shown} written again ({} servers admitted as peers)", peers.len());
            }
            Ok(()) => {}
            Err(e) if !failing => {
                failing = true;
                warn!("relay: cannot write the admitted peers into {shown}: {e} (the relay admits the old list)");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coturn_db(dir: &Path) -> PathBuf {
        let path = dir.join("turndb");
        let db = rusqlite::Connection::open(&path).expect("a database");
        // The table as coturn's schema.sql makes it.
        db.execute_batch(
            "CREATE TABLE allowed_peer_ip (realm varchar(127) default '', ip_range varchar(256), \
             primary key (realm,ip_range));",
        )
        .expect("the table");
        path
    }

    #[test]
    fn the_listed_servers_replace_the_realms_rows_and_only_those() {
        let dir = std::env::temp_dir().join(format!("arena-relay-peers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = coturn_db(&dir);
        let other = rusqlite::Connection::open(&path).expect("open");
        other.execute("INSERT INTO allowed_peer_ip VALUES ('elsewhere', '203.0.113.9')", []).expect("a row");
        let mut db = open(&path).expect("coturn's");
        let peers: BTreeSet<IpAddr> = ["11.0.3.1".parse().unwrap(), "2a00:4::10".parse().unwrap()].into();
        write(&mut db, "arena.test", &peers).expect("written");
        write(&mut db, "arena.test", &peers).expect("written twice");
        let rows = |realm: &str| -> Vec<String> {
            let mut q =
                other.prepare("SELECT ip_range FROM allowed_peer_ip WHERE realm = ?1 ORDER BY ip_range").unwrap();
            q.query_map([realm], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(rows("arena.test"), vec!["11.0.3.1".to_string(), "2a00:4::10".to_string()]);
        write(&mut db, "arena.test", &BTreeSet::new()).expect("emptied");
        assert!(rows("arena.test").is_empty());
        assert_eq!(rows("elsewhere"), vec!["203.0.113.9".to_string()], "another realm's rows stay");
        let not_coturn = dir.join("plain");
        rusqlite::Connection::open(&not_coturn).expect("a database").execute_batch("CREATE TABLE t (x);").unwrap();
        assert!(matches!(open(&not_coturn), Err(PeersDbError::NotCoturn(_))));
        assert!(matches!(open(&dir.join("missing")), Err(PeersDbError::Open(..))));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
