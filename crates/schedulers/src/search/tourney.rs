//! A tournament (loser) tree over the SMs: the event queue of the arrival-order simulator.
//!
//! Every SM has at most one pending event, and the simulator only ever reads the earliest one and then
//! pushes that same SM's next event (or retires it). A loser tree does exactly that in one comparison per
//! level, where a binary heap's sift-down compares both children at every level; the simulator spends most
//! of its time here, so the difference is most of its speed.

/// Keys are (time, SM): the earliest time first, then the lowest SM, as in the official simulator.
#[derive(Clone)]
pub(crate) struct Tourney {
    /// Leaves rounded up to a power of two; padding leaves and retired SMs hold +infinity.
    size: usize,
    time: Vec<f64>,
    /// `loser[node]` for internal nodes 1..size: the leaf that lost the match played there.
    loser: Vec<u32>,
    winner: u32,
}

impl Tourney {
    /// All `sms` SMs pending at time 0.
    pub fn new(sms: usize) -> Tourney {
        let size = sms.next_power_of_two().max(2);
        let mut time = vec![f64::INFINITY; size];
        time[..sms].iter_mut().for_each(|t| *t = 0.0);
        let mut t = Tourney { size, time, loser: vec![0; size], winner: 0 };
        // Play every match bottom-up; `win[node]` is the winner below node.
        let mut win = vec![0u32; 2 * size];
        for leaf in 0..size {
            win[size + leaf] = leaf as u32;
        }
        for node in (1..size).rev() {
            let (a, b) = (win[2 * node], win[2 * node + 1]);
            let (w, l) = if t.before(a, b) { (a, b) } else { (b, a) };
            win[node] = w;
            t.loser[node] = l;
        }
        t.winner = win[1];
        t
    }

    #[inline]
    fn before(&self, a: u32, b: u32) -> bool {
        let (ta, tb) = (self.time[a as usize], self.time[b as usize]);
        ta < tb || (ta == tb && a < b)
    }

    /// The earliest pending event, if any.
    #[inline]
    pub fn peek(&self) -> Option<(f64, u32)> {
        let t = self.time[self.winner as usize];
        (t != f64::INFINITY).then_some((t, self.winner))
    }

    /// Replaces the earliest event's time (that SM's next event, never earlier), or retires it with `None`.
    #[inline]
    pub fn replace_top(&mut self, next: Option<f64>) {
        let mut w = self.winner;
        self.time[w as usize] = next.unwrap_or(f64::INFINITY);
        let mut node = (self.size + w as usize) / 2;
        while node >= 1 {
            let l = self.loser[node];
            if self.before(l, w) {
                self.loser[node] = w;
                w = l;
            }
            node /= 2;
        }
        self.winner = w;
    }
}

#[cfg(test)]
mod tests {
    use super::Tourney;

    #[test]
    fn pops_in_time_then_sm_order() {
        let mut t = Tourney::new(5);
        // Give every SM a distinct next time, in a scrambled order, each as it comes to the top.
        let next = [7.0, 3.0, 3.0, 9.0, 1.0];
        let mut seen = Vec::new();
        for _ in 0..5 {
            let (time, sm) = t.peek().unwrap();
            assert_eq!(time, 0.0);
            seen.push(sm);
            t.replace_top(Some(next[sm as usize]));
        }
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        let mut order = Vec::new();
        while let Some((time, sm)) = t.peek() {
            order.push((time, sm));
            t.replace_top(None);
        }
        assert_eq!(order, vec![(1.0, 4), (3.0, 1), (3.0, 2), (7.0, 0), (9.0, 3)]);
    }
}
