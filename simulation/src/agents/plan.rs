//! The demo's Missions as plans: the WorkItem graph each Coordinator drives, with real Work
//! Contracts (§10.1), budgets that nest (§12, §14) and the stages of a software-development
//! Mission as separate graph nodes (§22): requirements analysis → implementation → testing →
//! code review → integration → human Approval.

use wasm_core::authority::Micros;
use wasm_core::authority::projection::{ResourceBudget, RetryPolicy, WorkContract};
use wasm_core::model::common::ActorType;

use super::{Pace, principal_id};

/// The demo's human MissionOwner (a development Organization principal).
pub const HUMAN: &str = "mission-owner";
/// The Organization control plane that replaces a failed Coordinator (§7.2).
pub const CONTROL_PLANE: &str = "control-plane";
pub const COORDINATOR_A: &str = "coordinator";
pub const COORDINATOR_B: &str = "coordinator-b";
pub const STANDBY: &str = "coordinator-standby";
pub const SECURITY_LEAD: &str = "security-lead";
pub const ANALYST: &str = "analyst";
pub const DEVELOPER: &str = "developer";
pub const DEVELOPER_B: &str = "developer-b";
pub const TESTER: &str = "tester";
pub const REVIEWER: &str = "reviewer";
pub const AUDITOR: &str = "security-auditor";

/// Every principal the demo uses: the development Organization must hold them all.
pub const CAST: &[(&str, ActorType)] = &[
    (HUMAN, ActorType::Human),
    (CONTROL_PLANE, ActorType::Service),
    (COORDINATOR_A, ActorType::Agent),
    (COORDINATOR_B, ActorType::Agent),
    (STANDBY, ActorType::Agent),
    (SECURITY_LEAD, ActorType::Agent),
    (ANALYST, ActorType::Agent),
    (DEVELOPER, ActorType::Agent),
    (DEVELOPER_B, ActorType::Agent),
    (TESTER, ActorType::Agent),
    (REVIEWER, ActorType::Agent),
    (AUDITOR, ActorType::Agent),
];

/// The demo's Agents (the Agent principals of [`CAST`]).
pub fn agent_names() -> Vec<&'static str> {
    CAST.iter()
        .filter(|(_, t)| *t == ActorType::Agent)
        .map(|(n, _)| *n)
        .collect()
}

pub fn agent_id(name: &str) -> String {
    principal_id(ActorType::Agent, name)
}

/// When a stage's WorkItem is authorized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// With the plan.
    AtStart,
    /// When the operator says so ([`super::Directive::Release`]): a later arrival.
    OnDirective,
}

/// One stage: a WorkItem of the graph.
#[derive(Clone, Debug)]
pub struct Stage {
    pub key: String,
    pub contract: WorkContract,
    /// Agent ids in order of preference.
    pub candidates: Vec<String>,
    /// Keys of the stages it depends on.
    pub after: Vec<String>,
    pub release: Release,
    /// Promote the WorkItem to a child Mission with this plan (§14).
    pub child: Option<Box<MissionPlan>>,
}

/// One Mission and its graph.
#[derive(Clone, Debug)]
pub struct MissionPlan {
    pub key: String,
    /// The stem of every identifier of this Mission.
    pub prefix: String,
    pub title: String,
    pub objective: String,
    pub definition_of_done: Vec<String>,
    pub deadline: Micros,
    pub budget: ResourceBudget,
    pub permissions: Vec<String>,
    pub coordinator: String,
    pub coordinator_lease_seconds: u64,
    /// Worker Memberships the Coordinator grants: (Agent id, roles).
    pub members: Vec<(String, Vec<String>)>,
    pub stages: Vec<Stage>,
    /// Who gets Worker-proposed sub-work.
    pub proposal_candidates: Vec<String>,
    /// The stage authorized after a change request (its goal names the feedback).
    pub on_changes: Option<Stage>,
}

impl MissionPlan {
    pub fn mission_id(&self) -> String {
        format!("{}:mission", self.prefix)
    }

    pub fn group_id(&self) -> String {
        format!("{}:group", self.prefix)
    }

    pub fn work_id(&self, key: &str) -> String {
        format!("{}:work:{key}", self.prefix)
    }

    pub fn stage(&self, key: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.key == key)
    }

    /// Every plan of this Mission and its child Missions.
    pub fn with_children(&self) -> Vec<&MissionPlan> {
        let mut out = vec![self];
        for s in &self.stages {
            if let Some(c) = &s.child {
                out.extend(c.with_children());
            }
        }
        out
    }
}

/// The WorkItem id a Worker-proposed item gets: its proposal id with `:work:` for
/// `:proposal:` (the Coordinator authorizes the proposal under that id).
pub fn work_id_of_proposal(proposal_id: &str) -> String {
    proposal_id.replacen(":proposal:", ":work:", 1)
}

/// The identifier stem of a Group's Mission (`<prefix>:group` → `<prefix>`).
pub fn prefix_of_group(group_id: &str) -> &str {
    group_id.strip_suffix(":group").unwrap_or(group_id)
}

/// One budget in all six dimensions (a `null` dimension would grant nothing, §12).
pub fn budget(
    financial: u64,
    tokens: u64,
    calls: u64,
    compute: u64,
    external: u64,
) -> ResourceBudget {
    ResourceBudget {
        financial_microunits: Some(financial),
        model_tokens: Some(tokens),
        tool_calls: Some(calls),
        compute_seconds: Some(compute),
        wall_clock_seconds: Some(compute * 2),
        external_actions: Some(external),
    }
}

/// The budget of an ordinary stage.
pub fn stage_budget() -> ResourceBudget {
    budget(500_000, 50_000, 200, 3_600, 0)
}

/// How a stage's contract differs from the ordinary one.
#[derive(Clone, Debug)]
pub struct Terms {
    pub priority: u64,
    /// Simulated execution steps (carried as `estimatedDurationSeconds`, one minute a step).
    pub steps: u64,
    pub inputs: Vec<String>,
    pub budget: ResourceBudget,
    /// `(sideEffectRisk, executionApproval)`.
    pub risk: (&'static str, &'static str),
    pub resources: Vec<String>,
}

impl Default for Terms {
    fn default() -> Self {
        Terms {
            priority: 50,
            steps: 2,
            inputs: Vec::new(),
            budget: stage_budget(),
            risk: ("none", "not_required"),
            resources: vec!["repo:main".into()],
        }
    }
}

/// A Work Contract with every member (§10.1).
pub fn contract(
    goal: &str,
    deliverables: &[&str],
    criteria: &[&str],
    deadline: Micros,
    terms: Terms,
) -> WorkContract {
    WorkContract {
        goal: goal.into(),
        deliverables: deliverables.iter().map(|s| (*s).to_owned()).collect(),
        acceptance_criteria: criteria.iter().map(|s| (*s).to_owned()).collect(),
        inputs: terms.inputs,
        allowed_tools: vec!["git".into(), "cargo".into()],
        allowed_resources: terms.resources,
        deadline,
        requested_priority: terms.priority,
        estimated_duration_seconds: Some(terms.steps.max(1) * 60),
        required_capabilities: Vec::new(),
        budget: terms.budget,
        retry_policy: RetryPolicy {
            max_attempts: 2,
            initial_backoff_seconds: 5,
            maximum_backoff_seconds: 60,
        },
        exclusive: true,
        side_effect_risk: terms.risk.0.into(),
        execution_approval: terms.risk.1.into(),
    }
}

/// How many simulated steps a contract asks for.
pub fn steps_of(contract: &WorkContract) -> u64 {
    contract
        .estimated_duration_seconds
        .map_or(1, |s| (s / 60).max(1))
}

fn stage(key: &str, contract: WorkContract, candidates: &[&str], after: &[&str]) -> Stage {
    Stage {
        key: key.into(),
        contract,
        candidates: candidates.iter().map(|n| agent_id(n)).collect(),
        after: after.iter().map(|s| (*s).to_owned()).collect(),
        release: Release::AtStart,
        child: None,
    }
}

fn members(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    list.iter()
        .map(|(n, roles)| (agent_id(n), roles.iter().map(|r| (*r).to_owned()).collect()))
        .collect()
}

/// The three Missions of the demo: `checkout` (A, with the child `checkout-security`) and
/// `search` (B), sharing the analyst, the developer, the tester and the reviewer.
#[derive(Clone, Debug)]
pub struct Plans {
    pub a: MissionPlan,
    pub b: MissionPlan,
}

impl Plans {
    pub fn new(run: &str, start: Micros, pace: &Pace) -> Plans {
        let day = 86_400;
        let deadline = start.plus_seconds(7 * day);
        let due = start.plus_seconds(6 * day);
        let stem = |k: &str| format!("urn:missionweaveprotocol:demo:{run}:{k}");
        let a_prefix = stem("checkout");
        let w = |p: &str, k: &str| format!("{p}:work:{k}");

        let security = MissionPlan {
            key: "checkout-security".into(),
            prefix: stem("checkout-security"),
            title: "Security review of the checkout service".into(),
            objective: "Threat-model the payment flow and audit third-party dependencies".into(),
            definition_of_done: vec![
                "threat model reviewed".into(),
                "no known-vulnerable dependency".into(),
            ],
            deadline: due,
            budget: budget(1_500_000, 150_000, 800, 15_000, 0),
            permissions: vec!["read".into()],
            coordinator: agent_id(SECURITY_LEAD),
            coordinator_lease_seconds: pace.coordinator_lease_seconds,
            members: members(&[(AUDITOR, &["worker"])]),
            stages: vec![
                stage(
                    "threat-model",
                    contract(
                        "Threat model of the payment flow",
                        &["threat model"],
                        &["every trust boundary has a mitigation"],
                        due,
                        Terms::default(),
                    ),
                    &[AUDITOR],
                    &[],
                ),
                stage(
                    "dependency-audit",
                    contract(
                        "Audit third-party dependencies",
                        &["audit report"],
                        &["no dependency with a known critical advisory"],
                        due,
                        Terms::default(),
                    ),
                    &[AUDITOR],
                    &["threat-model"],
                ),
            ],
            proposal_candidates: vec![agent_id(AUDITOR)],
            on_changes: None,
        };

        let mut security_stage = stage(
            "security",
            contract(
                "Security review of the checkout service (child Mission)",
                &["approved security review"],
                &["child Mission approved by its owner"],
                due,
                Terms {
                    budget: budget(2_000_000, 200_000, 1_000, 20_000, 0),
                    ..Terms::default()
                },
            ),
            &[],
            &["requirements"],
        );
        security_stage.child = Some(Box::new(security));

        let mut hotfix = stage(
            "hotfix-review",
            contract(
                "Urgent review of the session-fixation hot-fix",
                &["review verdict"],
                &["the fix closes the session-fixation hole"],
                due,
                Terms {
                    priority: 95,
                    steps: 1,
                    ..Terms::default()
                },
            ),
            &[REVIEWER],
            &[],
        );
        hotfix.release = Release::OnDirective;

        let a = MissionPlan {
            key: "checkout".into(),
            prefix: a_prefix.clone(),
            title: "Checkout service".into(),
            objective: "Ship the new checkout service with card payments".into(),
            definition_of_done: vec![
                "deployed to staging".into(),
                "reviewed and tested".into(),
                "security review approved".into(),
            ],
            deadline,
            budget: budget(20_000_000, 2_000_000, 10_000, 200_000, 5),
            permissions: vec!["deploy".into(), "read".into()],
            coordinator: agent_id(COORDINATOR_A),
            coordinator_lease_seconds: pace.coordinator_lease_seconds,
            members: members(&[
                (ANALYST, &["worker"]),
                (DEVELOPER, &["worker"]),
                (TESTER, &["worker"]),
                (REVIEWER, &["reviewer", "worker"]),
            ]),
            stages: vec![
                stage(
                    "requirements",
                    contract(
                        "Requirements analysis for checkout",
                        &["requirements document"],
                        &["every payment path has acceptance tests defined"],
                        due,
                        Terms::default(),
                    ),
                    &[ANALYST],
                    &[],
                ),
                stage(
                    "implementation",
                    contract(
                        "Implement the checkout service",
                        &["service source", "migration"],
                        &["builds", "covers every payment path"],
                        due,
                        Terms {
                            steps: 4,
                            inputs: vec![w(&a_prefix, "requirements")],
                            ..Terms::default()
                        },
                    ),
                    &[DEVELOPER],
                    &["requirements"],
                ),
                stage(
                    "testing",
                    contract(
                        "Test the checkout service",
                        &["test report"],
                        &["all acceptance tests pass"],
                        due,
                        Terms {
                            steps: 3,
                            inputs: vec![w(&a_prefix, "implementation")],
                            ..Terms::default()
                        },
                    ),
                    &[TESTER],
                    &["implementation"],
                ),
                security_stage,
                stage(
                    "review",
                    contract(
                        "Code review of the checkout service",
                        &["review report"],
                        &["no blocking finding", "tests cover the payment paths"],
                        due,
                        Terms {
                            priority: 60,
                            steps: 3,
                            inputs: vec![w(&a_prefix, "implementation"), w(&a_prefix, "testing")],
                            ..Terms::default()
                        },
                    ),
                    &[REVIEWER],
                    &["testing"],
                ),
                hotfix,
                stage(
                    "integration",
                    contract(
                        "Deploy the checkout service to staging",
                        &["staging deployment"],
                        &["staging health check passes"],
                        due,
                        Terms {
                            steps: 2,
                            budget: budget(500_000, 50_000, 200, 3_600, 1),
                            risk: ("high_risk", "human_required"),
                            resources: vec!["env:staging".into()],
                            ..Terms::default()
                        },
                    ),
                    &[DEVELOPER],
                    &["review", "security"],
                ),
            ],
            proposal_candidates: vec![agent_id(ANALYST)],
            on_changes: Some(stage(
                "changes",
                contract(
                    "Address the MissionOwner's change request",
                    &["revised release"],
                    &["the requested change is made"],
                    due,
                    Terms::default(),
                ),
                &[DEVELOPER],
                &[],
            )),
        };

        let b_prefix = stem("search");
        let b = MissionPlan {
            key: "search".into(),
            prefix: b_prefix.clone(),
            title: "Search indexing".into(),
            objective: "Index the product catalogue for full-text search".into(),
            definition_of_done: vec!["index builds nightly".into(), "reviewed".into()],
            deadline,
            budget: budget(10_000_000, 1_000_000, 5_000, 100_000, 2),
            permissions: vec!["read".into()],
            coordinator: agent_id(COORDINATOR_B),
            coordinator_lease_seconds: pace.short_coordinator_lease_seconds,
            members: members(&[
                (ANALYST, &["worker"]),
                (DEVELOPER_B, &["worker"]),
                (DEVELOPER, &["worker"]),
                (TESTER, &["worker"]),
                (REVIEWER, &["reviewer", "worker"]),
            ]),
            stages: vec![
                stage(
                    "requirements",
                    contract(
                        "Requirements analysis for search",
                        &["requirements document"],
                        &["ranking rules are specified"],
                        due,
                        Terms {
                            priority: 40,
                            ..Terms::default()
                        },
                    ),
                    &[ANALYST],
                    &[],
                ),
                stage(
                    "implementation",
                    contract(
                        "Implement the indexer",
                        &["indexer source"],
                        &["indexes the whole catalogue"],
                        due,
                        Terms {
                            priority: 40,
                            steps: 3,
                            inputs: vec![w(&b_prefix, "requirements")],
                            ..Terms::default()
                        },
                    ),
                    &[DEVELOPER_B, DEVELOPER],
                    &["requirements"],
                ),
                stage(
                    "testing",
                    contract(
                        "Test the indexer",
                        &["test report"],
                        &["relevance tests pass"],
                        due,
                        Terms {
                            priority: 40,
                            inputs: vec![w(&b_prefix, "implementation")],
                            ..Terms::default()
                        },
                    ),
                    &[TESTER],
                    &["implementation"],
                ),
                stage(
                    "review",
                    contract(
                        "Code review of the indexer",
                        &["review report"],
                        &["no blocking finding"],
                        due,
                        Terms {
                            priority: 40,
                            steps: 4,
                            inputs: vec![w(&b_prefix, "implementation"), w(&b_prefix, "testing")],
                            ..Terms::default()
                        },
                    ),
                    &[REVIEWER],
                    &["testing"],
                ),
                stage(
                    "integration",
                    contract(
                        "Enable the nightly index build",
                        &["scheduled job"],
                        &["the first nightly build succeeds"],
                        due,
                        Terms {
                            priority: 40,
                            steps: 1,
                            risk: ("reversible", "not_required"),
                            ..Terms::default()
                        },
                    ),
                    &[DEVELOPER],
                    &["review"],
                ),
            ],
            proposal_candidates: vec![agent_id(ANALYST)],
            on_changes: Some(stage(
                "changes",
                contract(
                    "Address the MissionOwner's change request",
                    &["revised release"],
                    &["the requested change is made"],
                    due,
                    Terms::default(),
                ),
                &[DEVELOPER],
                &[],
            )),
        };
        Plans { a, b }
    }

    /// Every Mission plan of the demo (roots and children).
    pub fn all(&self) -> Vec<&MissionPlan> {
        let mut v = self.a.with_children();
        v.extend(self.b.with_children());
        v
    }

    /// The plan of a Group.
    pub fn of_group(&self, group_id: &str) -> Option<&MissionPlan> {
        self.all().into_iter().find(|p| p.group_id() == group_id)
    }
}
