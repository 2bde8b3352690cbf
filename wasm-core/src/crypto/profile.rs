//! The nine Signed Document Verification Profiles of §6.4 (checklist §3.1).

use crate::json::Value;
use crate::model;
use crate::model::SchemaError;

/// How the expected signer is named by a document (§6.4 table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignerRule {
    /// The exact Principal object at this pointer.
    PrincipalObject(&'static str),
    /// An Agent whose id is the string at this pointer (Artifact `producer.agentId`).
    AgentId(&'static str),
    /// Any Organization service Principal (Agent Card; issuer authorization comes later).
    ServicePrincipal,
}

crate::string_enum!(
    /// A Signed Document kind: the bundle's `profileId` and the admission `documentKind`.
    pub enum DocumentKind {
        AgentCard = "agent-card",
        Approval = "approval",
        Artifact = "artifact",
        Command = "command",
        ContextPackage = "context-package",
        Event = "event",
        Evidence = "evidence",
        ExtensionProfile = "extension-profile",
        GroupSnapshot = "group-snapshot",
    }
);

type Validator = fn(&Value, bool) -> Result<(), SchemaError>;

impl DocumentKind {
    /// The protected signed-time field (JSON Pointer).
    pub fn protected_time_pointer(self) -> &'static str {
        match self {
            DocumentKind::AgentCard => "/issuedAt",
            DocumentKind::Approval | DocumentKind::Event => "/occurredAt",
            DocumentKind::Artifact | DocumentKind::Evidence | DocumentKind::GroupSnapshot => {
                "/createdAt"
            }
            DocumentKind::Command => "/issuedAt",
            DocumentKind::ContextPackage => "/generatedAt",
            DocumentKind::ExtensionProfile => "/approvedAt",
        }
    }

    pub fn signer_rule(self) -> SignerRule {
        match self {
            DocumentKind::AgentCard => SignerRule::ServicePrincipal,
            DocumentKind::Approval => SignerRule::PrincipalObject("/approver"),
            DocumentKind::Artifact => SignerRule::AgentId("/producer/agentId"),
            DocumentKind::Command => SignerRule::PrincipalObject("/actor"),
            DocumentKind::ContextPackage | DocumentKind::Evidence => {
                SignerRule::PrincipalObject("/generatedBy")
            }
            DocumentKind::Event => SignerRule::PrincipalObject("/acceptedBy"),
            DocumentKind::ExtensionProfile => SignerRule::PrincipalObject("/approvedBy"),
            DocumentKind::GroupSnapshot => SignerRule::PrincipalObject("/createdBy"),
        }
    }

    /// The schema file of the profile, relative to the bundle root.
    pub fn schema_file(self) -> &'static str {
        match self {
            DocumentKind::AgentCard => "schemas/agent-card.schema.json",
            DocumentKind::Approval => "schemas/approval.schema.json",
            DocumentKind::Artifact => "schemas/artifact.schema.json",
            DocumentKind::Command => "schemas/command.schema.json",
            DocumentKind::ContextPackage => "schemas/context-package.schema.json",
            DocumentKind::Event => "schemas/event.schema.json",
            DocumentKind::Evidence => "schemas/evidence.schema.json",
            DocumentKind::ExtensionProfile => "schemas/extension-profile.schema.json",
            DocumentKind::GroupSnapshot => "schemas/group-snapshot.schema.json",
        }
    }

    /// Stage 2: the typed model of the profile's schema.
    pub fn validator(self) -> Validator {
        match self {
            DocumentKind::AgentCard => model::agent_card::validate,
            DocumentKind::Approval => model::approval::validate,
            DocumentKind::Artifact => model::artifact::validate,
            DocumentKind::Command => model::command::validate,
            DocumentKind::ContextPackage => model::context_package::validate,
            DocumentKind::Event => model::event::validate,
            DocumentKind::Evidence => model::evidence::validate,
            DocumentKind::ExtensionProfile => model::extension_profile::validate,
            DocumentKind::GroupSnapshot => model::group_snapshot::validate,
        }
    }
}
