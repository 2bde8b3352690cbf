//! Which lazily loaded view an in-app link opens (`routes::lazy::Chunk::of_path`): the chunk
//! the console preloads when the pointer or the focus reaches the link.

use app::routes::lazy::Chunk;

#[test]
fn every_lazily_loaded_route_names_its_chunk() {
    for (path, chunk) in [
        ("/mission", Chunk::Mission),
        ("/mission/urn:a:group", Chunk::Mission),
        (
            "/mission/https:%2F%2Fh%2Fg?work_item=urn:a:w#x",
            Chunk::Mission,
        ),
        ("/ledger?mission=urn:a:m", Chunk::Ledger),
        ("/approvals", Chunk::Approvals),
        ("/approvals?mission=urn:a:m", Chunk::Approvals),
        ("/events", Chunk::Events),
        ("/conversations", Chunk::Conversations),
        ("/agents", Chunk::Agents),
        ("/protocol", Chunk::Protocol),
        ("/sign-in", Chunk::SignIn),
        // The join link the server prints opens the Sign-in view (same chunk).
        ("/join", Chunk::SignIn),
        (
            "/join#token=AbC-_0123456789xyzXYZ9&name=mission-owner",
            Chunk::SignIn,
        ),
        ("/settings", Chunk::Settings),
        ("/settings#theme", Chunk::Settings),
    ] {
        assert_eq!(Chunk::of_path(path), Some(chunk), "{path}");
    }
}

#[test]
fn the_board_and_other_paths_name_none() {
    // The board is in the main module; a relative or foreign link is not a view of this console.
    for path in [
        "/",
        "/board",
        "/?x=1",
        "/missions",
        "/mission-x",
        "/joined",
        "/sign-in-x",
        "/pkg/abc/app.js",
        "mission",
        "",
        "#main",
    ] {
        assert_eq!(Chunk::of_path(path), None, "{path}");
    }
}

#[test]
fn every_route_declared_in_the_shell_preloads_the_chunk_it_opens() {
    // The routes as app.rs declares them: a lazily loaded route's path must name the chunk its
    // view loads, or a link to it would preload the wrong view (or none).
    let shell = include_str!("../src/app.rs");
    let mut seen = 0;
    for line in shell.lines().filter(|l| l.contains("<Route path=path!(\"")) {
        let path = line
            .split("path!(\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("a route path");
        // A parameter (`:group`) stands for any value.
        let concrete = path.replace(":group", "urn:a:group");
        let chunk = line
            .split("lazy_view(Chunk::")
            .nth(1)
            .and_then(|r| r.split(')').next());
        let named = Chunk::of_path(&concrete).map(|c| format!("{c:?}"));
        assert_eq!(named.as_deref(), chunk, "{path}");
        seen += 1;
    }
    assert!(seen >= 13, "{seen} routes read from app.rs");
}
