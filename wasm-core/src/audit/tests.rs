//! The bundle's framing, without a history (the verifier over real Events is tested in
//! `simulation/tests/audit.rs`, which has an Organization to produce them).

use super::*;

#[test]
fn lines_are_json_lines_as_written() {
    assert!(matches!(verify(b""), Err(AuditError::Lines(_))));
    assert!(matches!(verify(b"{}"), Err(AuditError::Lines(_))));
    assert!(matches!(
        verify(b"{}\n"),
        Err(AuditError::Line {
            line: 1,
            section: Section::Header,
            ..
        })
    ));
    // Whitespace is not canonical: refused even where JSON allows it.
    let e = verify(b"{ }\n").map(|_| ());
    assert!(
        matches!(&e, Err(AuditError::Line { reason, .. }) if reason.contains("canonical")),
        "{e:?}"
    );
    let big = vec![b' '; MAX_BUNDLE_BYTES + 1];
    assert!(matches!(verify(&big), Err(AuditError::TooLarge { .. })));
}

#[test]
fn a_damaged_event_line_is_named_by_what_it_still_says() {
    let raw = br#"{"acceptedBy":{"id":"urn:s","type":"service"},"eventId":"urn:e:7","groupId":"urn:g:1","kind":"x","payload":{},"sequence":42,"signature":"#;
    let at = lenient_event_at(9, raw);
    assert_eq!(
        (
            at.line,
            at.group_id.as_str(),
            at.sequence.as_str(),
            at.event_id.as_str()
        ),
        (9, "urn:g:1", "42", "urn:e:7")
    );
    let at = lenient_event_at(3, b"garbage");
    assert_eq!(at.event_id, "?");
}

/// A header with `version` and `extra` members (the counts all zero otherwise).
fn header_line(version: u64, commands: Option<u64>) -> Vec<u8> {
    let commands = commands.map_or(String::new(), |n| format!("\"commands\":{n},"));
    format!(
        "{{\"admissions\":0,\"agentCards\":0,\"artifacts\":0,{commands}\"events\":0,\
         \"exportedAt\":\"2030-01-01T00:00:00Z\",\"format\":\"mwp-audit-bundle\",\"groups\":[],\
         \"organizationId\":\"urn:o\",\"version\":{version}}}\n"
    )
    .into_bytes()
}

fn header_refusal(bytes: &[u8]) -> Option<String> {
    match verify(bytes) {
        Err(AuditError::Line {
            line: 1,
            section: Section::Header,
            reason,
        }) => Some(reason),
        _ => None,
    }
}

#[test]
fn version_2_counts_its_commands_and_version_1_has_none() {
    // Version 2 without the count, version 1 with one, an unknown version: the header is
    // refused. A well-formed header of either version passes on to the Registry line.
    let r = header_refusal(&header_line(2, None));
    assert!(
        r.as_deref().is_some_and(|r| r.contains("commands")),
        "{r:?}"
    );
    let r = header_refusal(&header_line(1, Some(0)));
    assert!(
        r.as_deref().is_some_and(|r| r.contains("version 1")),
        "{r:?}"
    );
    let r = header_refusal(&header_line(3, Some(0)));
    assert!(r.as_deref().is_some_and(|r| r.contains("version")), "{r:?}");
    for ok in [header_line(2, Some(0)), header_line(1, None)] {
        assert!(
            matches!(
                verify(&ok),
                Err(AuditError::Line {
                    section: Section::Registry,
                    ..
                })
            ),
            "{:?}",
            verify(&ok)
        );
    }
}

#[test]
fn a_damaged_command_line_is_named_by_its_action_id() {
    let raw =
        br#"{"actionId":"urn:a:9","actor":{"id":"urn:h","type":"human"},"kind":"mission.appr"#;
    assert_eq!(lenient_member(raw, "actionId"), "urn:a:9");
    assert_eq!(lenient_member(b"{", "actionId"), "?");
    let e = AuditError::Command {
        line: 12,
        action_id: "urn:a:9".into(),
        reason: "signature: x".into(),
    };
    assert_eq!(e.to_string(), "line 12 (the Command urn:a:9): signature: x");
}
