use serde::{Deserialize, Serialize};

/// How units reach SMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchPolicy {
    /// A non-persistent grid: the hardware dispatches units in launch order, each to the first SM that frees
    /// up (ties to the lower SM id).
    InOrder,
    /// A persistent grid of P CTAs: CTA p runs units p, p + P, p + 2P, ... one after the other.
    Persistent,
}

impl LaunchPolicy {
    pub fn name(self) -> &'static str {
        match self {
            LaunchPolicy::InOrder => "in-order",
            LaunchPolicy::Persistent => "persistent",
        }
    }
}

/// The machine a schedule runs on: P SMs, one resident unit each, and a launch policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub sms: u32,
    pub launch: LaunchPolicy,
}

impl Machine {
    /// The wave (round) of the unit at launch position `position`: units of one wave start together when all
    /// units take equally long.
    pub fn wave_of(&self, position: usize) -> usize {
        position / self.sms as usize
    }
}
