//! The firewall in front of private node addresses (`network.nodeAddressesReachable: false`):
//! it stands on a Service's NodePorts before the Service is stored, so that no client of this
//! machine is ever refused there — a refusal would prove a host answered — even before the
//! listeners have caught up with the new Service.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::allocation::NodePortGuard;

/// How long a socket bound ahead of the listeners is kept for them: past it, one they did not
/// take belongs to no stored Service (its creation failed) or to a port they serve on every
/// address at once, and is let go.
const HOLD: Duration = Duration::from_secs(10);

/// Sockets bound on the private node addresses at each NodePort the allocator hands out,
/// silent (never accepted: a connection waits in the backlog, as one a firewall dropped),
/// until the listeners take them over.
#[derive(Debug)]
pub struct Firewall {
    /// The private node addresses.
    ips: Vec<Ipv4Addr>,
    /// At most this many sockets held at once (the listeners' share of the open-file limit).
    budget: usize,
    /// How long a socket the listeners did not take is held ([`HOLD`]).
    hold: Duration,
    held: Mutex<HashMap<(Ipv4Addr, u16), (TcpListener, Instant)>>,
}

impl Firewall {
    pub fn new(ips: Vec<Ipv4Addr>, budget: usize) -> Self {
        Self {
            ips,
            budget,
            hold: HOLD,
            held: Mutex::default(),
        }
    }

    /// The socket held at `ip:port`, for the listeners to serve from now on.
    pub fn take(&self, ip: Ipv4Addr, port: u16) -> Option<TcpListener> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(&(ip, port)).map(|(socket, _)| socket)
    }

    /// Lets go of every socket held at `port` (the listeners bind it on every address at once,
    /// which a socket on one address would stand in the way of) and of those held longer than
    /// [`HOLD`].
    pub fn release(&self, port: Option<u16>) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|(_, p), (_, at)| Some(*p) != port && at.elapsed() < self.hold);
    }

    /// How many sockets are held.
    #[cfg(test)]
    fn holding(&self) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl NodePortGuard for Firewall {
    fn guard(&self, ports: &[u16]) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        // A cluster with more node addresses than the budget holds gets its NodePorts on every
        // address at once from the listeners: nothing to stand on here.
        if ports.len() * self.ips.len() > self.budget / 2 {
            return;
        }
        for &port in ports {
            for &ip in &self.ips {
                // Held already (a port handed out again within the hold): held afresh.
                if let Some((_, at)) = held.get_mut(&(ip, port)) {
                    *at = Instant::now();
                    continue;
                }
                if held.len() >= self.budget / 2 {
                    continue;
                }
                // Already bound (the listeners serve this port there): they hold it silent.
                if let Ok(socket) = TcpListener::bind(SocketAddr::from((ip, port)))
                    && socket.set_nonblocking(true).is_ok()
                {
                    held.insert((ip, port), (socket, Instant::now()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn free_port(ip: Ipv4Addr) -> u16 {
        TcpListener::bind((ip, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port")
    }

    /// What a client of this machine gets at `ip:port` within half a second: Err(kind) when the
    /// connection fails, else what was answered (nothing, when it is held silent).
    fn dial(ip: Ipv4Addr, port: u16) -> Result<String, std::io::ErrorKind> {
        let addr = SocketAddr::from((ip, port));
        let mut stream =
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).map_err(|e| e.kind())?;
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .map_err(|e| e.kind())?;
        stream.write_all(b"GET / HTTP/1.0\r\n\r\n").map_err(|e| e.kind())?;
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        Ok(reply)
    }

    /// A NodePort guarded on two private addresses is held silent there at once (no refusal,
    /// no answer), until the listeners take its socket or it is let go; then it refuses again.
    #[test]
    fn a_guarded_node_port_is_silent_until_taken_or_released() {
        let (a, b) = (Ipv4Addr::new(127, 0, 3, 1), Ipv4Addr::new(127, 0, 3, 2));
        let port = free_port(a);
        let firewall = Firewall::new(vec![a, b], 100);
        assert_eq!(dial(a, port), Err(std::io::ErrorKind::ConnectionRefused));
        firewall.guard(&[port]);
        assert_eq!(firewall.holding(), 2);
        for ip in [a, b] {
            assert_eq!(dial(ip, port), Ok(String::new()), "{ip}:{port}");
        }
        let taken = firewall.take(a, port).expect("held at a");
        assert_eq!(taken.local_addr().map(|s| s.port()).ok(), Some(port));
        assert!(firewall.take(a, port).is_none());
        firewall.release(Some(port));
        assert_eq!(firewall.holding(), 0);
        assert_eq!(dial(b, port), Err(std::io::ErrorKind::ConnectionRefused));
        drop(taken);
        assert_eq!(dial(a, port), Err(std::io::ErrorKind::ConnectionRefused));
    }

    /// A socket the listeners did not take is let go once held past its time, counted from the
    /// last time its port was handed out.
    #[test]
    fn an_untaken_socket_is_let_go_after_its_hold_which_a_new_hand_out_renews() {
        let ip = Ipv4Addr::new(127, 0, 5, 1);
        let port = free_port(ip);
        let mut firewall = Firewall::new(vec![ip], 100);
        firewall.hold = Duration::from_millis(1800);
        firewall.guard(&[port]);
        std::thread::sleep(Duration::from_millis(1000));
        firewall.guard(&[port]);
        std::thread::sleep(Duration::from_millis(1000));
        firewall.release(None);
        assert_eq!(firewall.holding(), 1, "renewed 1 s ago: still held");
        std::thread::sleep(Duration::from_millis(1200));
        firewall.release(None);
        assert_eq!(firewall.holding(), 0);
        assert_eq!(dial(ip, port), Err(std::io::ErrorKind::ConnectionRefused));
    }

    /// Past its budget (half the listeners' share) the firewall binds nothing: the listeners
    /// lay such NodePorts out on every address at once.
    #[test]
    fn a_cluster_past_the_budget_is_left_to_the_listeners() {
        let ips: Vec<Ipv4Addr> = (1..=4).map(|n| Ipv4Addr::new(127, 0, 4, n)).collect();
        let port = free_port(ips[0]);
        let firewall = Firewall::new(ips, 6);
        firewall.guard(&[port]);
        assert_eq!(firewall.holding(), 0);
    }
}
