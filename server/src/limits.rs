//! Bounds that both edges apply (the HTTP `POST /api/commands` and the `/ws` binding).

/// The largest request body `POST /api/commands` reads: 1,265,536 bytes. PROTOCOL.md sets no
/// byte limit on a Command or a frame (§17.1 asks only for one JSON text per WebSocket
/// message; §17.4 sends large content as an Artifact, by reference), and a Command's `payload`
/// is an open object, so the bound comes from the schemas: the largest bounded string any
/// document carries inline is a Message text part, 100,000 characters
/// (`message.schema.json`); one character takes at most 12 bytes of JSON (an escaped
/// surrogate pair, `\uD83D\uDE00`); the envelope around it (identifiers of at most 512
/// characters, the actor, the signature) fits in 64 KiB. Larger bodies get 413 unread.
pub const MAX_COMMAND_BYTES: usize = 100_000 * 12 + 64 * 1024;
