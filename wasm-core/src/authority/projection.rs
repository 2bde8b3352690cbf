//! The authority's projections and shared payload shapes, with exactly the member sets of the
//! reference authority (payloads.md §2.3, §2.5): every member is always written, `null` for an
//! absent value. These are what Event payloads embed, and what replay rebuilds.

use super::clock::Micros;
use super::payload::Reader;
use crate::json::Object;
use crate::model::common::Actor;
use crate::model::membership::MembershipState;
use crate::model::mission::MissionState;
use crate::model::work_item::WorkItemState;
use crate::object;
use std::collections::BTreeMap;

object!(
    /// ResourceBudget: a limit per dimension; `null` grants nothing (§12, payloads.md §8).
    #[derive(Default)]
    pub struct ResourceBudget {
        "financialMicrounits" => financial_microunits: req Option<u64>,
        "modelTokens" => model_tokens: req Option<u64>,
        "toolCalls" => tool_calls: req Option<u64>,
        "computeSeconds" => compute_seconds: req Option<u64>,
        "wallClockSeconds" => wall_clock_seconds: req Option<u64>,
        "externalActions" => external_actions: req Option<u64>,
    }
);

/// The six budget dimensions in their wire order.
pub const DIMENSIONS: [&str; 6] = [
    "financialMicrounits",
    "modelTokens",
    "toolCalls",
    "computeSeconds",
    "wallClockSeconds",
    "externalActions",
];

impl ResourceBudget {
    pub fn get(&self, i: usize) -> Option<u64> {
        [
            self.financial_microunits,
            self.model_tokens,
            self.tool_calls,
            self.compute_seconds,
            self.wall_clock_seconds,
            self.external_actions,
        ][i]
    }

    /// Reads a ResourceBudget payload member (every dimension optional and nullable).
    pub fn read(r: &mut Reader) -> ResourceBudget {
        let max = crate::json::MAX_SAFE_INTEGER;
        ResourceBudget {
            financial_microunits: r.opt_int("financialMicrounits", 0, max),
            model_tokens: r.opt_int("modelTokens", 0, max),
            tool_calls: r.opt_int("toolCalls", 0, max),
            compute_seconds: r.opt_int("computeSeconds", 0, max),
            wall_clock_seconds: r.opt_int("wallClockSeconds", 0, max),
            external_actions: r.opt_int("externalActions", 0, max),
        }
    }

    /// Every dimension of `self` fits in `parent`: a `null` parent grants nothing.
    pub fn within(&self, parent: &ResourceBudget) -> Result<(), &'static str> {
        for (i, name) in DIMENSIONS.iter().enumerate() {
            if let Some(v) = self.get(i) {
                match parent.get(i) {
                    Some(p) if v <= p => {}
                    _ => return Err(name),
                }
            }
        }
        Ok(())
    }
}

object!(
    /// ResourceUsage: a delta or a total, six non-negative integers.
    #[derive(Default)]
    pub struct ResourceUsage {
        "financialMicrounits" => financial_microunits: req u64,
        "modelTokens" => model_tokens: req u64,
        "toolCalls" => tool_calls: req u64,
        "computeSeconds" => compute_seconds: req u64,
        "wallClockSeconds" => wall_clock_seconds: req u64,
        "externalActions" => external_actions: req u64,
    }
);

impl ResourceUsage {
    pub fn as_array(&self) -> [u64; 6] {
        [
            self.financial_microunits,
            self.model_tokens,
            self.tool_calls,
            self.compute_seconds,
            self.wall_clock_seconds,
            self.external_actions,
        ]
    }

    pub fn from_array(a: [u64; 6]) -> ResourceUsage {
        ResourceUsage {
            financial_microunits: a[0],
            model_tokens: a[1],
            tool_calls: a[2],
            compute_seconds: a[3],
            wall_clock_seconds: a[4],
            external_actions: a[5],
        }
    }

    pub fn is_zero(&self) -> bool {
        self.as_array().iter().all(|v| *v == 0)
    }

    /// Reads a ResourceUsage payload member (each dimension defaults to 0).
    pub fn read(r: &mut Reader) -> ResourceUsage {
        let max = crate::json::MAX_SAFE_INTEGER;
        ResourceUsage {
            financial_microunits: r.int("financialMicrounits", 0, max, Some(0)),
            model_tokens: r.int("modelTokens", 0, max, Some(0)),
            tool_calls: r.int("toolCalls", 0, max, Some(0)),
            compute_seconds: r.int("computeSeconds", 0, max, Some(0)),
            wall_clock_seconds: r.int("wallClockSeconds", 0, max, Some(0)),
            external_actions: r.int("externalActions", 0, max, Some(0)),
        }
    }
}

object!(
    /// DelegationBudget: all six dimensions required and non-null, plus `currency`.
    pub struct DelegationBudget {
        "currency" => currency: req String,
        "financialMicrounits" => financial_microunits: req u64,
        "modelTokens" => model_tokens: req u64,
        "toolCalls" => tool_calls: req u64,
        "computeSeconds" => compute_seconds: req u64,
        "wallClockSeconds" => wall_clock_seconds: req u64,
        "externalActions" => external_actions: req u64,
    }
);

object!(
    /// CapabilityRequirement: a capability and the minimum Agent Card version of it.
    pub struct CapabilityRequirement {
        "id" => id: req String,
        "minimumVersion" => minimum_version: req u64,
    }
);

impl CapabilityRequirement {
    /// Reads a list of requirements; ids must be unique.
    pub fn read_list(r: &mut Reader, name: &str) -> Vec<CapabilityRequirement> {
        let list = r.nested_list(name, |r| CapabilityRequirement {
            id: r.id("id"),
            minimum_version: r.int("minimumVersion", 1, crate::json::MAX_SAFE_INTEGER, Some(1)),
        });
        for (i, c) in list.iter().enumerate() {
            if list[..i].iter().any(|o| o.id == c.id) {
                r.error(name, format!("capability {:?} is listed twice", c.id));
            }
        }
        list
    }
}

object!(
    /// The WorkContract's retry policy (informational).
    pub struct RetryPolicy {
        "maxAttempts" => max_attempts: req u64,
        "initialBackoffSeconds" => initial_backoff_seconds: req u64,
        "maximumBackoffSeconds" => maximum_backoff_seconds: req u64,
    }
);

object!(
    /// WorkContract (§10.1; payloads.md §2.3): always written with every member.
    pub struct WorkContract {
        "goal" => goal: req String,
        "deliverables" => deliverables: req Vec<String>,
        "acceptanceCriteria" => acceptance_criteria: req Vec<String>,
        "inputs" => inputs: req Vec<String>,
        "allowedTools" => allowed_tools: req Vec<String>,
        "allowedResources" => allowed_resources: req Vec<String>,
        "deadline" => deadline: req Micros,
        "requestedPriority" => requested_priority: req u64,
        "estimatedDurationSeconds" => estimated_duration_seconds: req Option<u64>,
        "requiredCapabilities" => required_capabilities: req Vec<CapabilityRequirement>,
        "budget" => budget: req ResourceBudget,
        "retryPolicy" => retry_policy: req RetryPolicy,
        "exclusive" => exclusive: req bool,
        "sideEffectRisk" => side_effect_risk: req String,
        "executionApproval" => execution_approval: req String,
    }
);

impl WorkContract {
    /// Reads the `contract` payload member with the reference's defaults and rules.
    pub fn read(r: &mut Reader) -> WorkContract {
        let goal = r.id("goal");
        let deliverables = r.ids("deliverables", 1);
        let acceptance_criteria = r.ids("acceptanceCriteria", 1);
        let inputs = r.strings("inputs");
        let allowed_tools = r.ids("allowedTools", 0);
        let allowed_resources = r.ids("allowedResources", 0);
        let deadline = r.ts("deadline");
        let requested_priority = r.int("requestedPriority", 0, 100, Some(50));
        let estimated_duration_seconds = r.opt_int("estimatedDurationSeconds", 1, 31_536_000);
        let required_capabilities = CapabilityRequirement::read_list(r, "requiredCapabilities");
        let budget = r
            .nested("budget", false, ResourceBudget::read)
            .unwrap_or_default();
        let retry_policy = r
            .nested("retryPolicy", false, |r| {
                let max = crate::json::MAX_SAFE_INTEGER;
                let p = RetryPolicy {
                    max_attempts: r.int("maxAttempts", 1, max, Some(1)),
                    initial_backoff_seconds: r.int("initialBackoffSeconds", 0, max, Some(0)),
                    maximum_backoff_seconds: r.int("maximumBackoffSeconds", 0, max, Some(0)),
                };
                if p.maximum_backoff_seconds < p.initial_backoff_seconds {
                    r.error(
                        "maximumBackoffSeconds",
                        "must not be below initialBackoffSeconds",
                    );
                }
                p
            })
            .unwrap_or(RetryPolicy {
                max_attempts: 1,
                initial_backoff_seconds: 0,
                maximum_backoff_seconds: 0,
            });
        let exclusive = r.boolean("exclusive", true);
        let side_effect_risk = r.choice(
            "sideEffectRisk",
            &["none", "reversible", "external", "high_risk", "destructive"],
            Some("none"),
        );
        let execution_approval = r.choice(
            "executionApproval",
            &["not_required", "policy_required", "human_required"],
            Some("not_required"),
        );
        if matches!(side_effect_risk.as_str(), "high_risk" | "destructive")
            && execution_approval != "human_required"
        {
            r.error(
                "executionApproval",
                "high_risk and destructive work requires executionApproval human_required",
            );
        }
        WorkContract {
            goal,
            deliverables,
            acceptance_criteria,
            inputs,
            allowed_tools,
            allowed_resources,
            deadline,
            requested_priority,
            estimated_duration_seconds,
            required_capabilities,
            budget,
            retry_policy,
            exclusive,
            side_effect_risk,
            execution_approval,
        }
    }
}

object!(
    /// SelectionBasis of `work.offer` (auditable facts, never private reasoning).
    pub struct SelectionBasis {
        "requiredCapabilities" => required_capabilities: req Vec<CapabilityRequirement>,
        "verifiedCapabilityMatches" => verified_capability_matches: req Vec<String>,
        "authorizationEligible" => authorization_eligible: req bool,
        "availabilityEstimate" => availability_estimate: req Option<String>,
        "expectedCostMicrounits" => expected_cost_microunits: req Option<u64>,
        "reliabilityEvidence" => reliability_evidence: req Vec<String>,
        "policyRulesApplied" => policy_rules_applied: req Vec<String>,
    }
);

impl SelectionBasis {
    pub fn read(r: &mut Reader) -> SelectionBasis {
        SelectionBasis {
            required_capabilities: CapabilityRequirement::read_list(r, "requiredCapabilities"),
            verified_capability_matches: r.ids("verifiedCapabilityMatches", 0),
            authorization_eligible: r.boolean("authorizationEligible", true),
            availability_estimate: r.opt_string("availabilityEstimate"),
            expected_cost_microunits: r.opt_int(
                "expectedCostMicrounits",
                0,
                crate::json::MAX_SAFE_INTEGER,
            ),
            reliability_evidence: r.strings("reliabilityEvidence"),
            policy_rules_applied: r.strings("policyRulesApplied"),
        }
    }
}

object!(
    /// Compact inline Evidence of `work.submit` / `work.accept_result` (payloads.md §2.3).
    pub struct EvidenceItem {
        "kind" => kind: req String,
        "description" => description: req String,
        "success" => success: req bool,
        "artifactHash" => artifact_hash: req Option<String>,
        "data" => data: req Object,
    }
);

impl EvidenceItem {
    pub fn read(r: &mut Reader) -> EvidenceItem {
        EvidenceItem {
            kind: r.id("kind"),
            description: r.id("description"),
            success: r.boolean("success", true),
            artifact_hash: r.opt_string("artifactHash"),
            data: r.free_object("data"),
        }
    }
}

object!(
    /// A Checkpoint: structured, durable, safe-to-resume state reference.
    pub struct Checkpoint {
        "phase" => phase: req String,
        "completedMilestones" => completed_milestones: req Vec<String>,
        "nextStep" => next_step: req Option<String>,
        "stateArtifactHash" => state_artifact_hash: req Option<String>,
        "createdAt" => created_at: req Micros,
    }
);

impl Checkpoint {
    pub fn read(r: &mut Reader) -> Checkpoint {
        Checkpoint {
            phase: r.id("phase"),
            completed_milestones: r.strings("completedMilestones"),
            next_step: r.opt_string("nextStep"),
            state_artifact_hash: r.opt_string("stateArtifactHash"),
            created_at: r.ts("createdAt"),
        }
    }
}

object!(
    /// The Mission projection.
    pub struct Mission {
        "approvedArtifactHashes" => approved_artifact_hashes: req Vec<String>,
        "budget" => budget: req ResourceBudget,
        "childFailurePolicy" => child_failure_policy: req String,
        "coordinatorEpoch" => coordinator_epoch: req u64,
        "coordinatorId" => coordinator_id: req String,
        "coordinatorLeaseExpiresAt" => coordinator_lease_expires_at: req Option<Micros>,
        "createdAt" => created_at: req Micros,
        "deadline" => deadline: req Micros,
        "definitionOfDone" => definition_of_done: req Vec<String>,
        "failureReason" => failure_reason: req Option<String>,
        "followUpOfMissionId" => follow_up_of_mission_id: req Option<String>,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "objective" => objective: req String,
        "owner" => owner: req Actor,
        "parentMissionId" => parent_mission_id: req Option<String>,
        "parentWorkItemId" => parent_work_item_id: req Option<String>,
        "permissions" => permissions: req Vec<String>,
        "revision" => revision: req u64,
        "status" => status: req MissionState,
        "submittedArtifactHashes" => submitted_artifact_hashes: req Vec<String>,
        "submittedRevision" => submitted_revision: req Option<u64>,
        "title" => title: req String,
        "updatedAt" => updated_at: req Micros,
    }
);

impl Mission {
    /// `approved`, `cancelled` and `failed` are terminal (§7.1).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status,
            MissionState::Approved | MissionState::Cancelled | MissionState::Failed
        )
    }
}

object!(
    /// The Group projection.
    pub struct Group {
        "archiveSnapshotId" => archive_snapshot_id: req Option<String>,
        "archivedAt" => archived_at: req Option<Micros>,
        "createdAt" => created_at: req Micros,
        "id" => id: req String,
        "mainConversationId" => main_conversation_id: req String,
        "missionId" => mission_id: req String,
    }
);

object!(
    /// The Membership projection (§8).
    pub struct Membership {
        "endedAt" => ended_at: req Option<Micros>,
        "epoch" => epoch: req u64,
        "groupId" => group_id: req String,
        "joinedAt" => joined_at: req Micros,
        "principal" => principal: req Actor,
        "roles" => roles: req Vec<String>,
        "status" => status: req MembershipState,
        "visibilityAfterSequence" => visibility_after_sequence: req u64,
    }
);

impl Membership {
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    pub fn is_active(&self) -> bool {
        self.status == MembershipState::Active
    }
}

object!(
    /// The Message projection. There is no `authority` member: a Message never authorizes
    /// anything (§4 invariant 2).
    pub struct Message {
        "author" => author: req Actor,
        "content" => content: req String,
        "conversationId" => conversation_id: req String,
        "createdAt" => created_at: req Micros,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "mentions" => mentions: req Vec<Actor>,
    }
);

object!(
    /// A correction, retraction or redaction: a new fact, never a rewrite (§4 invariant 6).
    pub struct MessageAmendment {
        "actor" => actor: req Actor,
        "createdAt" => created_at: req Micros,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "kind" => kind: req String,
        "messageId" => message_id: req String,
        "reason" => reason: req String,
        "replacementContent" => replacement_content: req Option<String>,
    }
);

crate::string_enum!(
    /// A Work Proposal's `status` (§9; payloads.md: stored `open`, `authorized` once a
    /// WorkItem is made of it).
    pub enum ProposalStatus {
        Open = "open",
        Authorized = "authorized",
    }
);

object!(
    /// A Work Proposal: non-executable until authorized (§9).
    pub struct WorkProposal {
        "authorizedWorkItemId" => authorized_work_item_id: req Option<String>,
        "contract" => contract: req WorkContract,
        "createdAt" => created_at: req Micros,
        "dependencyIds" => dependency_ids: req Vec<String>,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "missionId" => mission_id: req String,
        "parentWorkItemId" => parent_work_item_id: req Option<String>,
        "proposedBy" => proposed_by: req Actor,
        "status" => status: req ProposalStatus,
        "updatedAt" => updated_at: req Micros,
    }
);

object!(
    /// The WorkItem projection (§10).
    pub struct WorkItem {
        "artifactIds" => artifact_ids: req Vec<String>,
        "assignedAgentCardVersion" => assigned_agent_card_version: req Option<u64>,
        "assignedCapabilityVersions" => assigned_capability_versions: req BTreeMap<String, u64>,
        "assigneeId" => assignee_id: req Option<String>,
        "blocker" => blocker: req Option<String>,
        "checkpoints" => checkpoints: req Vec<Checkpoint>,
        "childMissionId" => child_mission_id: req Option<String>,
        "contract" => contract: req WorkContract,
        "conversationId" => conversation_id: req String,
        "createdAt" => created_at: req Micros,
        "createdBy" => created_by: req Actor,
        "delegationDepth" => delegation_depth: req u64,
        "delegationGrantId" => delegation_grant_id: req Option<String>,
        "dependencyIds" => dependency_ids: req Vec<String>,
        "executionLeaseExpiresAt" => execution_lease_expires_at: req Option<Micros>,
        "executionLeaseId" => execution_lease_id: req Option<String>,
        "failureReason" => failure_reason: req Option<String>,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "missionId" => mission_id: req String,
        "offerExpiresAt" => offer_expires_at: req Option<Micros>,
        "offeredAgentIds" => offered_agent_ids: req Vec<String>,
        "ownershipEpoch" => ownership_epoch: req u64,
        "ownershipLeaseExpiresAt" => ownership_lease_expires_at: req Option<Micros>,
        "parentWorkItemId" => parent_work_item_id: req Option<String>,
        "revision" => revision: req u64,
        "selectionBasis" => selection_basis: req Option<SelectionBasis>,
        "status" => status: req WorkItemState,
        "submissionEvidence" => submission_evidence: req Vec<EvidenceItem>,
        "updatedAt" => updated_at: req Micros,
        "verificationEvidence" => verification_evidence: req Vec<EvidenceItem>,
    }
);

impl WorkItem {
    /// `verified`, `failed` and `cancelled` are terminal (§10.2).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status,
            WorkItemState::Verified | WorkItemState::Failed | WorkItemState::Cancelled
        )
    }
}

object!(
    /// The Execution Lease projection (§11.3).
    pub struct ExecutionLease {
        "closedAt" => closed_at: req Option<Micros>,
        "closureReason" => closure_reason: req Option<String>,
        "expiresAt" => expires_at: req Micros,
        "groupId" => group_id: req String,
        "holderAgentId" => holder_agent_id: req String,
        "issuedAt" => issued_at: req Micros,
        "lastRenewedAt" => last_renewed_at: req Option<Micros>,
        "leaseId" => lease_id: req String,
        "leaseType" => lease_type: req String,
        "missionId" => mission_id: req String,
        "ownershipEpoch" => ownership_epoch: req u64,
        "renewalCount" => renewal_count: req u64,
        "sessionEpoch" => session_epoch: req u64,
        "startsAt" => starts_at: req Micros,
        "state" => state: req String,
        "workItemId" => work_item_id: req String,
    }
);

object!(
    /// The final Approval of `mission.approve`, bound to a Mission revision and Artifact set.
    pub struct Approval {
        "acceptancePolicyVersion" => acceptance_policy_version: req String,
        "approvedAt" => approved_at: req Micros,
        "approver" => approver: req Actor,
        "artifactHashes" => artifact_hashes: req Vec<String>,
        "comments" => comments: req Option<String>,
        "id" => id: req String,
        "missionId" => mission_id: req String,
        "missionRevision" => mission_revision: req u64,
        /// The `signature.value` of the approving Command.
        "signature" => signature: req String,
    }
);

object!(
    /// The Execution Approval of `approval.grant_execution` (§12).
    pub struct ExecutionApproval {
        "approvedAt" => approved_at: req Micros,
        "approver" => approver: req Actor,
        "budget" => budget: req ResourceBudget,
        "comments" => comments: req Option<String>,
        "expiresAt" => expires_at: req Micros,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "missionId" => mission_id: req String,
        "operations" => operations: req Vec<String>,
        "ownershipEpoch" => ownership_epoch: req u64,
        "resources" => resources: req Vec<String>,
        "signature" => signature: req String,
        "workItemId" => work_item_id: req String,
    }
);

object!(
    /// A one-shot Cooperation Override Grant (§20).
    pub struct CooperationOverrideGrant {
        "approver" => approver: req Actor,
        "beneficiary" => beneficiary: req Actor,
        "consumedAt" => consumed_at: req Option<Micros>,
        "consumedEventId" => consumed_event_id: req Option<String>,
        "expiresAt" => expires_at: req Micros,
        "grantedAt" => granted_at: req Micros,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "missionId" => mission_id: req String,
        "policyName" => policy_name: req String,
        "reason" => reason: req String,
        "signature" => signature: req String,
        "targetActionId" => target_action_id: req String,
        "targetCommandKind" => target_command_kind: req String,
    }
);

object!(
    /// A Delegation Grant (§9.1). `allowedCapabilities` holds capability IDs with their
    /// minimum versions, as the payload gives them (payloads.md §6.13).
    pub struct DelegationGrant {
        "allowedCapabilities" => allowed_capabilities: req Vec<CapabilityRequirement>,
        "budget" => budget: req DelegationBudget,
        "coordinatorEpoch" => coordinator_epoch: req u64,
        "expiresAt" => expires_at: req Micros,
        "grantedAt" => granted_at: req Micros,
        "grantedBy" => granted_by: req Actor,
        "granteeAgentId" => grantee_agent_id: req String,
        "granteeMembershipEpoch" => grantee_membership_epoch: req u64,
        "groupId" => group_id: req String,
        "id" => id: req String,
        "maxDescendantDepth" => max_descendant_depth: req u64,
        "missionId" => mission_id: req String,
        "targetWorkItemId" => target_work_item_id: req String,
    }
);

object!(
    /// One capability of the internal Agent Card (payloads.md §6.33).
    pub struct CardCapability {
        "id" => id: req String,
        "version" => version: req u64,
        "inputSchema" => input_schema: req Option<String>,
        "outputSchema" => output_schema: req Option<String>,
        "constraints" => constraints: req Object,
        "verifiedEvidence" => verified_evidence: req Vec<String>,
    }
);

object!(
    /// The internal Agent Card registered by `…registry.agent_card_register`.
    pub struct AgentCardRecord {
        "agentId" => agent_id: req String,
        "version" => version: req u64,
        "displayName" => display_name: req String,
        "owner" => owner: req String,
        "publicKey" => public_key: req String,
        "capabilities" => capabilities: req Vec<CardCapability>,
        "issuedAt" => issued_at: req Micros,
        "signature" => signature: req String,
    }
);

impl AgentCardRecord {
    pub fn read(r: &mut Reader) -> AgentCardRecord {
        let max = crate::json::MAX_SAFE_INTEGER;
        let capabilities = r.nested_list("capabilities", |r| CardCapability {
            id: r.id("id"),
            version: r.int("version", 1, max, None),
            input_schema: r.opt_string("inputSchema"),
            output_schema: r.opt_string("outputSchema"),
            constraints: r.free_object("constraints"),
            verified_evidence: r.strings("verifiedEvidence"),
        });
        if !r.present("capabilities") {
            r.error("capabilities", "is required");
        }
        for (i, c) in capabilities.iter().enumerate() {
            if capabilities[..i].iter().any(|o| o.id == c.id) {
                r.error(
                    "capabilities",
                    format!("capability {:?} is listed twice", c.id),
                );
            }
        }
        AgentCardRecord {
            agent_id: r.id("agentId"),
            version: r.int("version", 1, max, None),
            display_name: r.id("displayName"),
            owner: r.id("owner"),
            public_key: r.id("publicKey"),
            capabilities,
            issued_at: r.ts("issuedAt"),
            signature: r.string("signature"),
        }
    }

    /// The card's version of a capability, if it has one.
    pub fn capability_version(&self, id: &str) -> Option<u64> {
        self.capabilities
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.version)
    }
}
