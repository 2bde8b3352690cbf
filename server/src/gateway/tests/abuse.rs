//! Bounded under abuse (issue 26): each test performs the attack against a real server on a
//! loopback port and checks what the attacker gets and that others are still served. Waits
//! are bounded only so that a failure cannot hang the suite; nothing asserts a duration.

use super::*;
use crate::gateway::listen::ListenLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A TCP connection to the server from the loopback address `127.0.0.<last>` (Linux routes
/// all of 127/8 to loopback, so each is another client address).
async fn tcp_from(srv: &Server, last: u8) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, last], 0)))
        .expect("bind");
    socket.connect(srv.addr()).await.expect("connect")
}

/// `GET /healthz` on a kept-alive HTTP/1.1 connection: whether it was answered `ok`.
async fn healthz(s: &mut TcpStream) -> bool {
    if s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(PATIENCE, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return false,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!("neither an answer nor a close"),
        }
        let text = String::from_utf8_lossy(&got);
        if text.contains("\r\n\r\nok") {
            return text.starts_with("HTTP/1.1 200");
        }
    }
}

/// Reads until the server closes the connection (true), or `PATIENCE` passes (false).
async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(PATIENCE, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Sends `head` then one more header byte each 50 ms (a slowloris), until the server closes
/// the connection (true) or 600 bytes went (false: 30 s of trickle).
async fn trickle_until_cut(s: &mut TcpStream, head: &[u8]) -> bool {
    if s.write_all(head).await.is_err() {
        return true;
    }
    let mut buf = [0u8; 1024];
    for _ in 0..600 {
        match tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // An answer (a 408) before the head is complete: keep reading to the close.
            Ok(Ok(_)) => continue,
            Err(_) => {}
        }
        if s.write_all(b"a").await.is_err() {
            return true;
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_caps_are_closed_at_once_and_a_freed_slot_is_reused() {
    let dir = TempDir::new("caps");
    let listen = ListenLimits {
        max_connections: 5,
        max_per_address: 3,
        ..ListenLimits::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            tls: false,
            listen,
            ..Options::default()
        },
    )
    .await;
    // Three from one address are served, and stay open.
    let mut first = Vec::new();
    for _ in 0..3 {
        let mut s = tcp_from(&srv, 1).await;
        assert!(
            healthz(&mut s).await,
            "under the caps a connection is served"
        );
        first.push(s);
    }
    // A fourth from that address is closed at once, unread.
    let mut over = tcp_from(&srv, 1).await;
    assert!(
        !healthz(&mut over).await,
        "over the per-address cap the connection is closed"
    );
    // Another address is still served, up to the global cap.
    let mut second = Vec::new();
    for _ in 0..2 {
        let mut s = tcp_from(&srv, 2).await;
        assert!(healthz(&mut s).await, "another address is not held back");
        second.push(s);
    }
    let mut over = tcp_from(&srv, 3).await;
    assert!(
        !healthz(&mut over).await,
        "over the global cap the connection is closed"
    );
    // The connections served before the refusals still are.
    assert!(healthz(&mut first[0]).await);
    assert!(healthz(&mut second[1]).await);
    // A closed connection gives its place back.
    drop(first.pop());
    let mut reused = false;
    for _ in 0..500 {
        let mut s = tcp_from(&srv, 1).await;
        if healthz(&mut s).await {
            reused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reused, "a freed place is taken again");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_websocket_holds_its_place_under_the_global_cap() {
    let dir = TempDir::new("caps-tls");
    let listen = ListenLimits {
        max_connections: 2,
        ..ListenLimits::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            tls: true,
            listen,
            ..Options::default()
        },
    )
    .await;
    let mut coord = srv.session("coord").await;
    let outsider = srv.session("outsider").await;
    // A third connection is closed before its TLS handshake.
    let tls = srv
        .root
        .clone()
        .map(|r| crate::gateway::client::tls_trusting(r).expect("tls"));
    assert!(
        Client::connect(&srv.url, tls.clone()).await.is_err(),
        "over the global cap the TLS connection is closed"
    );
    ping_pong(&mut coord).await;
    drop(outsider);
    let mut admitted = None;
    for _ in 0..500 {
        if let Ok(c) = Client::connect(&srv.url, tls.clone()).await {
            admitted = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut c = admitted.expect("the closed WebSocket's place is taken again");
    let p = &srv.h.principals["outsider"];
    c.hello(&srv.h.id("outsider"), &p.key_id, &p.signer)
        .await
        .expect("HELLO");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_and_a_silent_connection_are_cut() {
    let dir = TempDir::new("slowloris");
    let listen = ListenLimits {
        header_read_timeout: Duration::from_millis(300),
        ..ListenLimits::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            tls: false,
            listen: listen.clone(),
            ..Options::default()
        },
    )
    .await;
    // A first request trickled byte by byte.
    let mut s = tcp_from(&srv, 1).await;
    assert!(
        trickle_until_cut(
            &mut s,
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
        )
        .await,
        "a header sent byte by byte is cut"
    );
    // The same on a kept-alive connection, after a request answered in full.
    let mut s = tcp_from(&srv, 1).await;
    assert!(healthz(&mut s).await);
    assert!(
        trickle_until_cut(&mut s, b"GET /healthz HTTP/1.1\r\nX-Slow: ").await,
        "a later request's header sent byte by byte is cut"
    );
    // HTTP/2's preface trickled.
    let mut s = tcp_from(&srv, 1).await;
    assert!(
        trickle_until_cut(&mut s, b"PRI * HTTP/2.0\r\n").await,
        "a trickled HTTP/2 preface is cut"
    );
    // A connection that sends nothing.
    let mut s = tcp_from(&srv, 1).await;
    assert!(closed_by_server(&mut s).await, "a silent connection is cut");
    // Others are served meanwhile.
    let mut s = tcp_from(&srv, 2).await;
    assert!(healthz(&mut s).await);
    srv.stop().await;

    // Over TLS: a connection that never sends its ClientHello.
    let dir = TempDir::new("slowloris-tls");
    let srv = Server::start(
        &dir,
        Options {
            tls: true,
            listen,
            ..Options::default()
        },
    )
    .await;
    let mut s = tcp_from(&srv, 1).await;
    assert!(
        closed_by_server(&mut s).await,
        "a TLS handshake that does not come is cut"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_and_a_quiet_websocket_is_not() {
    let dir = TempDir::new("idle");
    let listen = ListenLimits {
        idle_timeout: Duration::from_millis(300),
        ..ListenLimits::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            tls: false,
            listen,
            ..Options::default()
        },
    )
    .await;
    let mut coord = srv.session("coord").await;
    let mut s = tcp_from(&srv, 1).await;
    assert!(healthz(&mut s).await);
    assert!(
        closed_by_server(&mut s).await,
        "a kept-alive connection left idle is closed"
    );
    // The WebSocket was as quiet all that time, and is still served.
    ping_pong(&mut coord).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_session_is_closed_at_its_expiry() {
    let dir = TempDir::new("expiry");
    let config = GatewayConfig {
        session_ttl: Duration::from_millis(500),
        ..GatewayConfig::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            config,
            ..Options::default()
        },
    )
    .await;
    let mut c = srv.session("coord").await;
    // It says nothing more: at its expiresAt it gets the fatal ERROR, then the Close.
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "AUTH_REQUIRED", "{}", json::to_string(&e));
    assert_eq!(
        s(&e, "/error/message"),
        "the session has expired; HELLO again"
    );
    assert_eq!(e.pointer("/error/fatal"), Some(&Value::Bool(true)));
    closed(&mut c).await;
    let coord = srv.h.id("coord");
    for _ in 0..500 {
        if srv.gw.hub.connections_of(&coord).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        srv.gw.hub.connections_of(&coord).is_empty(),
        "the expired connection left the hub"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_or_ack_listing_too_many_groups_is_refused_before_any_reply() {
    let dir = TempDir::new("items");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);
    let mut c = srv.session("coord").await;
    // About 1 MB: the real Group first (its replay would start), then 15,000 unknown ones
    // (each would get its own GROUP_NOT_FOUND).
    let names: Vec<String> = (0..15_000)
        .map(|i| format!("urn:x:group:flood-{i:05}-{}", "x".repeat(12)))
        .collect();
    let mut groups: Vec<(&str, u64)> = vec![(GROUP, 0)];
    groups.extend(names.iter().map(|g| (g.as_str(), 0)));
    let sub = c.subscribe_frame(&groups);
    let bytes = json::to_string(&sub).len();
    assert!(bytes > 1_000_000, "the SUBSCRIBE is {bytes} bytes");
    c.send(&sub).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/relatedFrameId"), s(&sub, "/frameId"));
    assert_eq!(n(&e, "/error/details/maxItems"), 256);
    // Nothing else was queued: no replay, no GROUP_NOT_FOUND; the next frame is the PONG.
    ping_pong(&mut c).await;
    assert_eq!(
        srv.gw
            .hub
            .connections_of(&srv.h.id("coord"))
            .first()
            .and_then(|conn| conn.subscription(GROUP)),
        None,
        "no subscription was started"
    );

    // An ACK of 300 Groups: refused as a whole, no Cursor stored.
    let mut acks: Vec<(&str, u64)> = vec![(GROUP, head)];
    acks.extend(names.iter().take(299).map(|g| (g.as_str(), 1)));
    let ack = c.ack_frame(&acks, &runtime::now().format());
    c.send(&ack).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION", "{}", json::to_string(&e));
    assert_eq!(n(&e, "/error/details/maxItems"), 256);
    ping_pong(&mut c).await;

    // At the bound, a SUBSCRIBE is served: the Group's replay, then one GROUP_NOT_FOUND each.
    let mut groups: Vec<(&str, u64)> = vec![(GROUP, 0)];
    groups.extend(names.iter().take(255).map(|g| (g.as_str(), 0)));
    let sub = c.subscribe_frame(&groups);
    c.send(&sub).await.expect("send");
    let mut not_found = 0;
    let mut events_seen = 0;
    while not_found < 255 || events_seen < head {
        let f = frame(&mut c).await;
        match s(&f, "/frameType") {
            "EVENT" => events_seen += 1,
            "ERROR" => {
                assert_eq!(code(&f), "GROUP_NOT_FOUND");
                not_found += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(srv.gw.cursor(&srv.h.id("coord"), GROUP), None);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_acks_are_written_in_one_transaction_and_survive_a_restart() {
    let dir = TempDir::new("acks");
    let mut srv = Server::start(&dir, Options::default()).await;
    for g in [GROUP, GROUP_B] {
        let create = srv.create_mission(g, "owner");
        srv.accepted(create).await;
    }
    for _ in 0..30 {
        let p = srv.post(GROUP, "owner", None);
        srv.accepted(p).await;
    }
    let (head_a, head_b) = (srv.head(GROUP), srv.head(GROUP_B));
    let mut c = srv.session("coord").await;
    // Held back from the store while the flood arrives, so that what one batch takes does
    // not depend on timing: then let go.
    srv.gw.acks.pause();
    let before = srv.gw.acks.transactions();
    let mut frames = 0;
    for _ in 0..4 {
        for seq in 1..=head_a {
            let ack = c.ack_frame(
                &[(GROUP, seq), (GROUP_B, seq.min(head_b))],
                &runtime::now().format(),
            );
            c.send(&ack).await.expect("send");
            frames += 1;
        }
    }
    // A lower Cursor last: Cursors only move forward.
    let ack = c.ack_frame(&[(GROUP, 1)], &runtime::now().format());
    c.send(&ack).await.expect("send");
    frames += 1;
    ping_pong(&mut c).await; // every ACK was read
    srv.gw.acks.resume();
    let coord = srv.h.id("coord");
    // The store counts a transaction once its commit has returned, a moment after the rows
    // are readable: wait for both.
    for _ in 0..500 {
        if srv.gw.cursor(&coord, GROUP) == Some(head_a)
            && srv.gw.cursor(&coord, GROUP_B) == Some(head_b)
            && srv.gw.acks.transactions() > before
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(srv.gw.cursor(&coord, GROUP), Some(head_a));
    assert_eq!(srv.gw.cursor(&coord, GROUP_B), Some(head_b));
    let transactions = srv.gw.acks.transactions() - before;
    assert_eq!(
        transactions,
        1,
        "{frames} ACK frames ({} Cursors) took {transactions} transactions",
        2 * frames - 1
    );
    drop(c);
    srv.stop().await;

    let srv = Server::start(&dir, Options::default()).await;
    assert_eq!(srv.gw.cursor(&coord, GROUP), Some(head_a), "durable");
    assert_eq!(srv.gw.cursor(&coord, GROUP_B), Some(head_b), "durable");
    srv.stop().await;
}

/// A `message.post` by `who` in `group` whose Event is about `size` bytes: its content is
/// short (512 characters at most) but it mentions many principals (no count limit).
fn large_post(srv: &mut Server, group: &str, who: &str, size: usize) -> Vec<u8> {
    srv.n += 1;
    let mut p = Object::new();
    p.insert(
        "messageId",
        Value::string(format!("{group}:message:{who}:{}", srv.n)),
    );
    p.insert("conversationId", Value::string(format!("{group}:mission")));
    p.insert("content", Value::string("a large Event"));
    let mentions = (0..size / 500)
        .map(|i| {
            let mut m = Object::new();
            m.insert("type", Value::string("agent"));
            m.insert(
                "id",
                Value::string(format!("urn:x:agent:mention-{i:04}-{}", "z".repeat(440))),
            );
            Value::Object(m)
        })
        .collect();
    p.insert("mentions", Value::Array(mentions));
    let env = Envelope {
        group_id: Some(group.to_owned()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    srv.h.command(who, "message.post", &env, p, runtime::now())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_events_are_bounded_in_bytes_per_connection_live_and_in_replay() {
    let dir = TempDir::new("bytes");
    const CONN_BYTES: usize = 1 << 20;
    const EVENT: usize = 90_000;
    let config = GatewayConfig {
        group_buffer_bytes: 512 * 1024,
        connection_buffer_bytes: CONN_BYTES,
        ..GatewayConfig::default()
    };
    let mut srv = Server::start(
        &dir,
        Options {
            config,
            send_buffer: Some(4096),
            ..Options::default()
        },
    )
    .await;
    for g in [GROUP, GROUP_B] {
        let create = srv.create_mission(g, "owner");
        srv.accepted(create).await;
    }
    let (head_a, head_b) = (srv.head(GROUP), srv.head(GROUP_B));
    // A subscriber of both Groups that reads nothing.
    let mut slow = srv.slow_session("coord").await;
    let sub = slow.subscribe_frame(&[(GROUP, head_a), (GROUP_B, head_b)]);
    slow.send(&sub).await.expect("send");
    let coord = srv.h.id("coord");
    let conn = loop {
        let conns = srv.gw.hub.connections_of(&coord);
        if let Some(c) = conns.first()
            && c.subscription(GROUP) == Some(SubState::Live)
            && c.subscription(GROUP_B) == Some(SubState::Live)
        {
            break Arc::clone(c);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // 40 Events of 90 KB on A (3.6 MB, far fewer than the 256 frames a Group may hold),
    // then 10 on B.
    let (many_a, many_b) = (40u64, 10u64);
    for _ in 0..many_a {
        let p = large_post(&mut srv, GROUP, "owner", EVENT);
        srv.accepted(p).await;
    }
    for _ in 0..many_b {
        let p = large_post(&mut srv, GROUP_B, "owner", EVENT);
        srv.accepted(p).await;
    }
    let high = conn.high_water_bytes.load(Ordering::Relaxed);
    assert!(
        high <= CONN_BYTES + EVENT + 1024,
        "the stalled connection held {high} bytes of EVENT frames"
    );
    assert_eq!(conn.subscription(GROUP), Some(SubState::Paused));
    // Once it reads: each Group's Events up to its pause, contiguous, then its BACKPRESSURE.
    let mut last = [head_a, head_b];
    let mut paused = [false, false];
    while !(paused[0] && paused[1]) {
        let f = frame(&mut slow).await;
        let i = match (s(&f, "/event/groupId"), s(&f, "/error/groupId")) {
            (GROUP, _) | (_, GROUP) => 0,
            (GROUP_B, _) | (_, GROUP_B) => 1,
            _ => panic!("unexpected {}", json::to_string(&f)),
        };
        if s(&f, "/frameType") == "EVENT" {
            assert!(!paused[i], "nothing of a Group after its pause");
            last[i] += 1;
            assert_eq!(n(&f, "/event/sequence"), last[i]);
        } else {
            assert_eq!(code(&f), "BACKPRESSURE", "{}", json::to_string(&f));
            assert_eq!(n(&f, "/error/details/resumeAfterSequence"), last[i]);
            paused[i] = true;
        }
    }
    assert!(last[0] < head_a + many_a, "A was paused before its end");
    drop(slow);

    // Replay of the whole history to a new stalled reader: it waits for room, within the
    // same bound, and nothing is lost once it reads.
    let mut slow = srv.slow_session("coord").await;
    let sub = slow.subscribe_frame(&[(GROUP, 0)]);
    slow.send(&sub).await.expect("send");
    let conn = loop {
        let conns = srv.gw.hub.connections_of(&coord);
        if let Some(c) = conns.first()
            && c.high_water_bytes.load(Ordering::Relaxed) > 0
        {
            break Arc::clone(c);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // Give the replay time to queue all it would (it stops at the bound, not at a time).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let high = conn.high_water_bytes.load(Ordering::Relaxed);
    assert!(
        high <= CONN_BYTES + EVENT + 1024,
        "the replay held {high} bytes of EVENT frames"
    );
    events(&mut slow, GROUP, 0, srv.head(GROUP)).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_session_cap_is_refused_and_others_are_not() {
    let dir = TempDir::new("per-principal");
    let config = GatewayConfig {
        sessions_per_principal: 3,
        ..GatewayConfig::default()
    };
    let srv = Server::start(
        &dir,
        Options {
            config,
            ..Options::default()
        },
    )
    .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(srv.session("owner").await);
    }
    // The next HELLO of that principal is refused, fatally, and says why.
    let p = &srv.h.principals["owner"];
    let mut c = srv.client(true).await;
    let e = c
        .hello(&srv.h.id("owner"), &p.key_id, &p.signer)
        .await
        .expect_err("past the cap");
    assert_fatal(&e, "BACKPRESSURE", "3 open sessions");
    closed(&mut c).await;
    // Another principal is not held back, and the three sessions go on.
    let mut other = srv.session("stranger").await;
    ping_pong(&mut other).await;
    for c in &mut open {
        ping_pong(c).await;
    }
    // A closed session gives its place back.
    drop(open.pop());
    let mut admitted = false;
    for _ in 0..500 {
        let mut c = srv.client(true).await;
        if c.hello(&srv.h.id("owner"), &p.key_id, &p.signer)
            .await
            .is_ok()
        {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(admitted, "a freed place is taken again");
    srv.stop().await;
}

/// `POST /api/commands` of `bytes` as if from the client address `10.0.0.<last>` (the
/// listener sets `ConnectInfo` on every request).
fn command_from(bytes: Vec<u8>, last: u8) -> axum::http::Request<axum::body::Body> {
    let mut r = axum::http::Request::post("/api/commands")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(bytes))
        .expect("request");
    r.extensions_mut()
        .insert(axum::extract::ConnectInfo(std::net::SocketAddr::from((
            [10, 0, 0, last],
            40_000,
        ))));
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_address_gets_backpressure_and_another_address_gets_through() {
    let dir = TempDir::new("fair");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    // The HTTP edge over an intake that holds the flooder's Commands in front of the
    // authority, so that they stay in flight.
    let (intake, hold) = srv.handle.with_hold();
    let app = router(AppState::new(&dir.0.join("public"), "{}".into()).authority(intake));
    let flood: Vec<Vec<u8>> = (0..33).map(|_| srv.post(GROUP, "owner", None)).collect();
    hold.hold_matching(flood.iter().map(|b| action_of(b).into_bytes()).collect());
    let mut held = Vec::new();
    for bytes in flood.iter().take(32) {
        let app = app.clone();
        let r = command_from(bytes.clone(), 1);
        held.push(tokio::spawn(async move { app.oneshot(r).await }));
    }
    for _ in 0..1500 {
        if hold.waiting() == 32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        hold.waiting(),
        32,
        "the flooder holds its 32 Commands in flight"
    );
    // One more from the flooder: 503 BACKPRESSURE with Retry-After, not queued.
    let r = tokio::time::timeout(
        PATIENCE,
        app.clone().oneshot(command_from(flood[32].clone(), 1)),
    )
    .await
    .expect("answered at once, not held")
    .expect("http");
    assert_eq!(r.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    let body = axum::body::to_bytes(r.into_body(), 1 << 20)
        .await
        .expect("body");
    let doc = json::parse(&body).expect("json");
    assert_eq!(
        s(&doc, "/code"),
        "BACKPRESSURE",
        "{}",
        json::to_string(&doc)
    );
    assert_eq!(
        hold.waiting(),
        32,
        "the refused Command never reached the queue"
    );
    // Another address still gets through.
    let other = srv.post(GROUP, "owner", None);
    let r = tokio::time::timeout(PATIENCE, app.clone().oneshot(command_from(other, 2)))
        .await
        .expect("answered")
        .expect("http");
    assert_eq!(r.status(), axum::http::StatusCode::OK);
    // Once its Commands are answered, the flooder may send again.
    hold.release();
    for h in held {
        let r = h.await.expect("task").expect("http");
        assert_eq!(r.status(), axum::http::StatusCode::OK);
    }
    let r = app
        .oneshot(command_from(flood[32].clone(), 1))
        .await
        .expect("http");
    assert_eq!(r.status(), axum::http::StatusCode::OK);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_after_the_membership_ended_is_answered_as_an_unknown_group() {
    let dir = TempDir::new("ack-ended");
    let mut srv = Server::start(&dir, Options::default()).await;
    let outsider = srv.h.id("outsider");
    let env = |g: &str| Envelope {
        group_id: Some(g.to_owned()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    let member = || {
        let mut principal = Object::new();
        principal.insert("type", Value::string("agent"));
        principal.insert("id", Value::string(outsider.clone()));
        principal
    };
    for g in [GROUP, GROUP_B] {
        let create = srv.create_mission(g, "owner");
        srv.accepted(create).await;
        let mut p = Object::new();
        p.insert("principal", Value::Object(member()));
        p.insert("roles", Value::Array(vec![Value::string("worker")]));
        let add = srv
            .h
            .command("owner", "membership.change", &env(g), p, runtime::now());
        srv.accepted(add).await;
    }
    let mut p = Object::new();
    p.insert("principal", Value::Object(member()));
    let end = srv
        .h
        .command("owner", "membership.end", &env(GROUP), p, runtime::now());
    srv.accepted(end).await;
    let head = srv.head(GROUP);
    let mut c = srv.session("outsider").await;
    let mut docs = Vec::new();
    for g in [GROUP, "urn:x:group:nowhere"] {
        let ack = c.ack_frame(&[(g, head)], &runtime::now().format());
        c.send(&ack).await.expect("send");
        let e = frame(&mut c).await;
        assert_eq!(s(&e, "/frameType"), "ERROR", "{}", json::to_string(&e));
        assert_eq!(code(&e), "GROUP_NOT_FOUND");
        assert_eq!(s(&e, "/error/groupId"), g);
        assert_eq!(s(&e, "/error/relatedFrameId"), s(&ack, "/frameId"));
        let mut doc = e.pointer("/error").cloned().expect("error");
        if let Value::Object(o) = &mut doc {
            for volatile in ["occurredAt", "groupId", "relatedFrameId"] {
                o.remove(volatile);
            }
        }
        docs.push(json::to_string(&doc));
    }
    assert_eq!(
        docs[0], docs[1],
        "the answers must not tell the Groups apart"
    );
    // A Group where it is still a member: stored; the ended one never was.
    let ack = c.ack_frame(&[(GROUP_B, srv.head(GROUP_B))], &runtime::now().format());
    c.send(&ack).await.expect("send");
    ping_pong(&mut c).await;
    for _ in 0..500 {
        if srv.gw.cursor(&outsider, GROUP_B).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(srv.gw.cursor(&outsider, GROUP_B), Some(srv.head(GROUP_B)));
    assert_eq!(
        srv.gw.cursor(&outsider, GROUP),
        None,
        "no Cursor after the end"
    );
    srv.stop().await;
}
