//! The signed grants a Group records whole: Execution Approvals (§12; payloads.md §6.31) and
//! cooperation override grants (§20; payloads.md §6.32).

use crate::authority::projection::{CooperationOverrideGrant, ExecutionApproval};

one_member!(
    /// `approval.execution.granted`: the Execution Approval that gates `work.start`.
    ExecutionApprovalGranted { approval: ExecutionApproval = "approval" }
);

one_member!(
    /// `policy.cooperation_override.granted`: a one-time pass over one cooperation limit.
    CooperationOverrideGranted {
        cooperation_override_grant: CooperationOverrideGrant = "cooperationOverrideGrant"
    }
);
