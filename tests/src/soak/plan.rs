//! What each soak stand-in's remote agent will do: a random but reproducible (seeded) plan
//! of turns, changes between turns, misbehaviours on delivery, and an ending.

use std::time::Duration;

pub const WORKING: &str = "TASK_STATE_WORKING";
pub const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
pub const FAILED: &str = "TASK_STATE_FAILED";
pub const CANCELED: &str = "TASK_STATE_CANCELED";

/// SplitMix64: small, seedable and the same everywhere, so a seed names a whole run.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.between(1, 100) <= percent
    }
}

/// How the stand-in is meant to hear its remote task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Watch {
    Push,
    Follow,
    Off,
}

impl Watch {
    pub fn name(self) -> &'static str {
        match self {
            Watch::Push => "push",
            Watch::Follow => "follow",
            Watch::Off => "off",
        }
    }
}

/// A soak persona: an agent served by the soak on `port` (0: an agent of its own for each
/// stand-in, which dies, on a port of [`DIES_PORTS`]), how the stand-in hears it, and how the agent misbehaves all the
/// time. `deployed` personas are in `tests/registry-agents.json`; the soak puts the others
/// through the registry when it starts.
#[derive(Clone, Copy, Debug)]
pub struct Persona {
    pub name: &'static str,
    pub port: u16,
    pub watch: Watch,
    pub habit: Habit,
    pub deployed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Habit {
    Polite,
    /// Push registration and deletes answer after 2 s.
    Slow,
    /// Refuses push registration (the stand-in follows instead).
    RefusesPush,
    /// Drops every subscription after 4 s.
    DropsStreams,
    /// Asks each question with a file part whose name is 500 KB.
    HugeFilename,
    /// Echoes the stand-in's push token in every progress text.
    EchoesToken,
    /// Streams artifacts of many small parts, past the manifest's bound, after the first
    /// turn.
    Hoards,
    /// Dies for good where another agent would end its task (and each stand-in has an
    /// agent of its own).
    Dies,
}

/// Where the dying agents listen, one port each, never one a dead agent had (a port the
/// system picks could be one, and a dead agent's stand-in would reach a live one).
pub const DIES_PORTS: std::ops::Range<u16> = 27300..27700;

/// How long the soak's dying agents may be unreachable before their stand-ins end (the
/// entry's `max_unreachable`).
pub const DIES_MAX_UNREACHABLE_SECS: u64 = 10;
/// The hoarding agent's artifacts, each of this many small parts: about 450 bytes a part
/// in the manifest, so 5,400 parts are past its 2 MiB.
pub const HOARD_ARTIFACTS: usize = 6;
pub const HOARD_PARTS: usize = 900;

pub const PERSONAS: [Persona; 10] = [
    Persona {
        name: "soak-push-a",
        port: 27150,
        watch: Watch::Push,
        habit: Habit::Polite,
        deployed: true,
    },
    Persona {
        name: "soak-push-b",
        port: 27151,
        watch: Watch::Push,
        habit: Habit::Slow,
        deployed: true,
    },
    Persona {
        name: "soak-push-c",
        port: 27152,
        watch: Watch::Follow,
        habit: Habit::RefusesPush,
        deployed: true,
    },
    Persona {
        name: "soak-follow-a",
        port: 27153,
        watch: Watch::Follow,
        habit: Habit::DropsStreams,
        deployed: true,
    },
    Persona {
        name: "soak-follow-b",
        port: 27154,
        watch: Watch::Follow,
        habit: Habit::Polite,
        deployed: true,
    },
    Persona {
        name: "soak-off",
        port: 27155,
        watch: Watch::Off,
        habit: Habit::Polite,
        deployed: true,
    },
    Persona {
        name: "soak-hugename",
        port: 27156,
        watch: Watch::Push,
        habit: Habit::HugeFilename,
        deployed: false,
    },
    Persona {
        name: "soak-echo",
        port: 27157,
        watch: Watch::Push,
        habit: Habit::EchoesToken,
        deployed: false,
    },
    Persona {
        name: "soak-hoard",
        port: 27158,
        watch: Watch::Follow,
        habit: Habit::Hoards,
        deployed: false,
    },
    Persona {
        name: "soak-dies",
        port: 0,
        watch: Watch::Follow,
        habit: Habit::Dies,
        deployed: false,
    },
];

impl Persona {
    /// Its registry entry, for the personas the soak puts through the registry.
    pub fn entry(&self, url: &str) -> serde_json::Value {
        let updates = match self.watch {
            Watch::Push => "auto",
            Watch::Follow => "follow",
            Watch::Off => "off",
        };
        let mut entry = serde_json::json!({"url": url, "follow_interval": 1, "updates": updates});
        if self.habit == Habit::Dies {
            entry["max_unreachable"] = DIES_MAX_UNREACHABLE_SECS.into();
        }
        entry
    }
}

/// How one change's push reaches the stand-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Delivery {
    Normal,
    /// Pushed twice.
    Duplicate,
    /// Pushed, then the task's previous status is pushed again.
    Stale,
    /// A second change follows at once; its push arrives before the first's.
    OutOfOrder,
    /// Pushed before GetTask shows it; GetTask catches up 1.5 s later.
    PushFirst,
    /// Never pushed (A2A senders do not retry).
    Lost,
}

impl Delivery {
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Normal => "normal",
            Delivery::Duplicate => "duplicate push",
            Delivery::Stale => "stale push",
            Delivery::OutOfOrder => "out-of-order pushes",
            Delivery::PushFirst => "push before GetTask shows it",
            Delivery::Lost => "lost push",
        }
    }

    fn pick(rng: &mut Rng) -> Self {
        match rng.between(1, 100) {
            1..=50 => Delivery::Normal,
            51..=60 => Delivery::Duplicate,
            61..=70 => Delivery::Stale,
            71..=80 => Delivery::OutOfOrder,
            81..=92 => Delivery::PushFirst,
            _ => Delivery::Lost,
        }
    }
}

/// How the remote task ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ending {
    Completed,
    Failed,
    /// The agent cancels its own task.
    SelfCanceled,
    /// The parent cancels the stand-in.
    ParentCancel,
    /// The agent dies with its task open; the stand-in ends FAILED once it has been
    /// unreachable for its `max_unreachable`.
    AgentDied,
}

impl Ending {
    pub fn name(self) -> &'static str {
        match self {
            Ending::Completed => "completed",
            Ending::Failed => "failed",
            Ending::SelfCanceled => "canceled by the agent",
            Ending::ParentCancel => "canceled by the parent",
            Ending::AgentDied => "the agent died",
        }
    }

    /// The remote state it leaves (a parent's cancel ends CANCELED too).
    pub fn state(self) -> &'static str {
        match self {
            Ending::Completed => COMPLETED,
            Ending::Failed | Ending::AgentDied => FAILED,
            Ending::SelfCanceled | Ending::ParentCancel => CANCELED,
        }
    }
}

/// One thing the agent does between turns, after a pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Progress {
        text: String,
        delivery: Delivery,
    },
    /// Asks a question (INPUT_REQUIRED); the soak's orchestrator answers when it hears it.
    Ask {
        text: String,
        delivery: Delivery,
    },
    End {
        ending: Ending,
        text: String,
        delivery: Delivery,
    },
    /// The agent dies.
    Die,
}

/// After turn `k` is answered: pauses and steps (push and follow), or nothing (off:
/// its turns say everything).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub steps: Vec<(Duration, Step)>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub id: String,
    pub persona: Persona,
    /// What turn `k` streams (the last state is where the turn stops).
    pub turns: Vec<Vec<(String, String)>>,
    /// For push and follow: what the agent does after turn `k`.
    pub segments: Vec<Segment>,
    pub ending: Ending,
    /// The question the parent answers after turn/segment `k` (None: the last one).
    pub questions: Vec<Option<String>>,
}

/// The plan of the `index`th stand-in of a run seeded `seed` (its id starts with `tag`, to
/// tell runs apart); pauses between changes are drawn from `gap`.
pub fn plan(tag: &str, seed: u64, index: usize, gap: (Duration, Duration)) -> Plan {
    let mut rng = Rng::new(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let persona = PERSONAS[index % PERSONAS.len()];
    let id = format!("{tag}-s{seed}-{index}");
    let asks = rng.between(0, 2) as usize;
    let ending = match rng.between(1, 100) {
        _ if persona.habit == Habit::Dies => Ending::AgentDied,
        1..=45 => Ending::Completed,
        46..=60 => Ending::Failed,
        61..=78 => Ending::SelfCanceled,
        _ => Ending::ParentCancel,
    };
    let (low, high) = (gap.0.as_millis() as u64, gap.1.as_millis() as u64);
    let pause = |rng: &mut Rng| Duration::from_millis(rng.between(low, high.max(low)));
    let mut turns = Vec::new();
    let mut segments = Vec::new();
    let mut questions = Vec::new();
    for k in 0..=asks {
        let question = (k < asks).then(|| format!("{id} q{}", k + 1));
        let last = k == asks;
        if persona.watch == Watch::Off {
            let mut turn = vec![(WORKING.to_owned(), format!("{id} t{k}"))];
            match (&question, ending) {
                (Some(q), _) => turn.push((INPUT_REQUIRED.to_owned(), q.clone())),
                // The parent cancels while the stand-in waits for its answer.
                (None, Ending::ParentCancel) => {
                    turn.push((INPUT_REQUIRED.to_owned(), format!("{id} q{}", k + 1)));
                }
                (None, e) => turn.push((e.state().to_owned(), format!("{id} {}", e.name()))),
            }
            turns.push(turn);
            segments.push(Segment { steps: Vec::new() });
        } else {
            turns.push(vec![(WORKING.to_owned(), format!("{id} t{k}"))]);
            let mut steps = Vec::new();
            for p in 0..rng.between(0, 3) {
                let delivery = Delivery::pick(&mut rng);
                steps.push((
                    pause(&mut rng),
                    Step::Progress {
                        text: format!("{id} t{k} p{p}"),
                        delivery,
                    },
                ));
            }
            let delivery = Delivery::pick(&mut rng);
            let step = match (&question, ending) {
                (Some(q), _) => Step::Ask {
                    text: q.clone(),
                    delivery,
                },
                (None, Ending::ParentCancel) => Step::Progress {
                    text: format!("{id} t{k} last"),
                    delivery,
                },
                (None, Ending::AgentDied) => Step::Die,
                (None, e) => Step::End {
                    ending: e,
                    text: format!("{id} {}", e.name()),
                    delivery,
                },
            };
            steps.push((pause(&mut rng), step));
            segments.push(Segment { steps });
        }
        questions.push(if last { None } else { question });
    }
    Plan {
        id,
        persona,
        turns,
        segments,
        ending,
        questions,
    }
}

/// The text of the parent's message that starts turn `k` (the agent reads the stand-in
/// and the turn from it).
pub fn turn_text(id: &str, k: usize) -> String {
    format!("soak {id} a{k}")
}

/// (stand-in, turn) from a turn's text.
pub fn parse_turn_text(text: &str) -> Option<(String, usize)> {
    let rest = text.strip_prefix("soak ")?;
    let (id, k) = rest.rsplit_once(" a")?;
    Some((id.to_owned(), k.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAP: (Duration, Duration) = (Duration::from_millis(100), Duration::from_millis(900));

    #[test]
    fn a_seed_names_the_same_plans() {
        let a = plan("t", 7, 3, GAP);
        let b = plan("t", 7, 3, GAP);
        assert_eq!(a.turns, b.turns);
        assert_eq!(a.segments, b.segments);
        assert_ne!(
            plan("t", 8, 3, GAP).segments,
            a.segments,
            "another seed, another plan"
        );
    }

    #[test]
    fn every_plan_ends_and_asks_once_per_extra_turn() {
        for i in 0..300 {
            let p = plan("t", 1, i, GAP);
            assert_eq!(p.turns.len(), p.questions.len());
            assert_eq!(p.questions.iter().filter(|q| q.is_none()).count(), 1);
            assert!(p.questions.last().unwrap().is_none());
            let ends_in_segment = p
                .segments
                .last()
                .unwrap()
                .steps
                .iter()
                .any(|(_, s)| matches!(s, Step::End { .. } | Step::Die));
            let ends_in_turn = p.turns.last().unwrap().last().unwrap().0 != WORKING
                && p.persona.watch == Watch::Off;
            if p.ending != Ending::ParentCancel {
                assert!(ends_in_segment || ends_in_turn, "{p:?}");
            }
            if p.segments.iter().any(|s| !s.steps.is_empty()) {
                assert_ne!(
                    p.persona.watch,
                    Watch::Off,
                    "off agents change only in turns"
                );
            }
        }
    }

    #[test]
    fn a_run_mixes_every_watch_ending_and_delivery() {
        let plans: Vec<Plan> = (0..120).map(|i| plan("t", 42, i, GAP)).collect();
        for watch in [Watch::Push, Watch::Follow, Watch::Off] {
            assert!(plans.iter().any(|p| p.persona.watch == watch));
        }
        for ending in [
            Ending::Completed,
            Ending::Failed,
            Ending::SelfCanceled,
            Ending::ParentCancel,
            Ending::AgentDied,
        ] {
            assert!(plans.iter().any(|p| p.ending == ending), "{ending:?}");
        }
        let deliveries: std::collections::HashSet<Delivery> = plans
            .iter()
            .flat_map(|p| &p.segments)
            .flat_map(|s| &s.steps)
            .filter_map(|(_, s)| match s {
                Step::Progress { delivery, .. }
                | Step::Ask { delivery, .. }
                | Step::End { delivery, .. } => Some(*delivery),
                Step::Die => None,
            })
            .collect();
        assert_eq!(deliveries.len(), 6, "{deliveries:?}");
    }

    #[test]
    fn turn_texts_round_trip() {
        assert_eq!(
            parse_turn_text(&turn_text("soak-1-2", 3)),
            Some(("soak-1-2".to_owned(), 3))
        );
        assert_eq!(parse_turn_text("hello"), None);
    }
}
