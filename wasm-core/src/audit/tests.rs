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
