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
        "/pkg/abc/app.js",
        "mission",
        "",
        "#main",
    ] {
        assert_eq!(Chunk::of_path(path), None, "{path}");
    }
}
