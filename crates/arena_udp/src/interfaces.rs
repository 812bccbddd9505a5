//! This machine's network interfaces: the addresses a server tells its
//! players and the networks the LAN browser broadcasts to. A browser page
//! cannot list them: there the list is an error saying so.

use std::io;
use std::net::{IpAddr, Ipv4Addr};

/// One address of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub ip: IpAddr,
    /// fe80::/10 or 169.254/16: useless to another machine without a scope.
    pub link_local: bool,
    /// IPv4: where a broadcast to its network goes (the interface's
    /// broadcast address, else its subnet's: `ip addr add` without `brd +`
    /// leaves none, and netlink then gives the address itself).
    pub broadcast: Option<Ipv4Addr>,
}

/// Every interface's addresses.
#[cfg(not(target_arch = "wasm32"))]
pub fn interfaces() -> io::Result<Vec<Interface>> {
    Ok(if_addrs::get_if_addrs()?
        .into_iter()
        .map(|interface| {
            let broadcast = match &interface.addr {
                if_addrs::IfAddr::V4(v4) => {
                    let subnet = Ipv4Addr::from(u32::from(v4.ip) | !u32::from(v4.netmask));
                    Some(v4.broadcast.filter(|b| *b != v4.ip && !b.is_unspecified()).unwrap_or(subnet))
                }
                if_addrs::IfAddr::V6(_) => None,
            };
            Interface { ip: interface.ip(), link_local: interface.is_link_local(), broadcast }
        })
        .collect())
}

/// A page has no interfaces to list.
#[cfg(target_arch = "wasm32")]
pub fn interfaces() -> io::Result<Vec<Interface>> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "a browser page cannot list network interfaces"))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_listed_with_its_broadcast() {
        let listed = interfaces().expect("interfaces");
        let lo = listed.iter().find(|i| i.ip == IpAddr::V4(Ipv4Addr::LOCALHOST)).expect("127.0.0.1 is an interface");
        assert!(!lo.link_local);
        // 127.0.0.1/8: the subnet's broadcast when the interface names none.
        assert!(lo.broadcast.is_some_and(|b| b.octets()[0] == 127), "{lo:?}");
    }
}
