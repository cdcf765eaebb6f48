//! `infermeter dataset fetch` against a local server that serves the Hugging Face Hub's
//! layout (`HEAD`/`GET /datasets/{repo}/resolve/{revision}/{path}` with `X-Repo-Commit`,
//! `X-Linked-Etag`, `X-Linked-Size`, a redirect to the file's storage, and `Range`), pointed
//! at with `HF_ENDPOINT`: the download lands in `$HF_HOME`'s cache in `huggingface_hub`'s
//! layout, resumes after a cut connection (within one run and across runs), is checked
//! against the sha256 etag, and a scenario naming it as `hf://datasets/…` resolves through
//! the cache, with a clear error before it is fetched.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::support::{command, describe, text};

const REPO: &str = "acme/chats";
const FILE: &str = "data/sharegpt.json";
const COMMIT: &str = "1234567890abcdef1234567890abcdef12345678";
/// Where the `gsm8k` recipe's file is resolved on the Hub.
const GSM8K_RESOLVE: &str = "/datasets/openai/gsm8k/resolve/main/main/test-00000-of-00001.parquet";

/// What the server was asked, and how it should misbehave.
#[derive(Default)]
struct State {
    /// The `Range` header of every GET, in order (`None` for a whole-file GET).
    ranges: Vec<Option<String>>,
    /// Cut this many GETs after `cut_after` bytes of the body.
    cuts_left: u32,
    cut_after: usize,
    /// Serve these bytes while announcing `body`'s etag (a corrupted download).
    corrupt: bool,
    /// Answer the GET with another length than the HEAD announced.
    lie: Option<Lie>,
}

/// How a hostile storage server's GET disagrees with the `X-Linked-Size` its HEAD announced.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// The file, then 64 MiB more, without a `Content-Length` (the body ends when the
    /// connection closes).
    Endless,
    /// The same bytes with a `Content-Length` that says so.
    LongerAnnounced,
    /// Half the file, with a `Content-Length` that says so.
    ShorterAnnounced,
    /// Half the file, chunked, ended cleanly with the last chunk.
    ShorterChunked,
}

struct Hub {
    base: String,
    state: Arc<Mutex<State>>,
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// A ShareGPT file big enough to be cut part-way.
fn body() -> Vec<u8> {
    let mut convs = Vec::new();
    for i in 0..400 {
        convs.push(serde_json::json!({
            "id": format!("c{i}"),
            "conversations": [
                {"from": "human", "value": format!("Question number {i}: tell me about benchmarks and latency please.")},
                {"from": "gpt", "value": format!("Answer number {i}: latency is measured from the scheduled send time, always.")}
            ]
        }));
    }
    serde_json::to_vec(&convs).unwrap()
}

impl Hub {
    fn start(body: Vec<u8>) -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        let body = Arc::new(body);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { break };
                let (st, body) = (st.clone(), body.clone());
                std::thread::spawn(move || serve(conn, &st, &body));
            }
        });
        Hub { base, state }
    }
}

fn serve(mut conn: TcpStream, state: &Mutex<State>, body: &[u8]) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("range")
        {
            range = Some(v.trim().to_string());
        }
    }
    let mut parts = request.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("");
    // The file a ShareGPT fetch names, or the one the `gsm8k` recipe does.
    let resolve = if path == GSM8K_RESOLVE {
        GSM8K_RESOLVE.to_string()
    } else {
        format!("/datasets/{REPO}/resolve/main/{FILE}")
    };
    let storage = "/storage/blob";
    let etag = sha256_hex(body);
    let write = |conn: &mut TcpStream, head: String, data: &[u8]| {
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(data);
    };
    if path == resolve && method == "HEAD" {
        // As the Hub answers for an LFS file: a redirect carrying the file's own headers.
        write(
            &mut conn,
            format!(
                "HTTP/1.1 302 Found\r\nLocation: {storage}\r\nX-Repo-Commit: {COMMIT}\r\n\
                 X-Linked-Etag: \"{etag}\"\r\nX-Linked-Size: {}\r\nETag: \"W/abc\"\r\n\
                 Content-Length: 0\r\nConnection: close\r\n\r\n",
                body.len()
            ),
            b"",
        );
    } else if path == resolve && method == "GET" {
        write(
            &mut conn,
            format!(
                "HTTP/1.1 302 Found\r\nLocation: {storage}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
            b"",
        );
    } else if path == storage && method == "GET" {
        storage_get(&mut conn, state, body, range.as_deref());
    } else {
        write(
            &mut conn,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
            b"",
        );
    }
    let mut sink = Vec::new();
    let _ = conn.read_to_end(&mut sink);
}

/// The storage's answer to a GET of the file (`range` as asked), as `state` says to behave.
fn storage_get(conn: &mut TcpStream, state: &Mutex<State>, body: &[u8], range: Option<&str>) {
    let write = |conn: &mut TcpStream, head: String, data: &[u8]| {
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(data);
    };
    let mut st = state.lock().unwrap();
    st.ranges.push(range.map(str::to_string));
    let mut data = body.to_vec();
    if st.corrupt {
        data[10] ^= 0x20;
    }
    let from = range
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let status = if from > 0 {
        format!(
            "206 Partial Content\r\nContent-Range: bytes {from}-{}/{}",
            data.len() - 1,
            data.len()
        )
    } else {
        "200 OK".to_string()
    };
    let rest = &data[from..];
    let cut = st.cuts_left > 0;
    if cut {
        st.cuts_left -= 1;
    }
    let cut_after = st.cut_after;
    let lie = st.lie;
    drop(st);
    if let Some(lie) = lie {
        lie_about(conn, lie, rest);
        return;
    }
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        rest.len()
    );
    if cut {
        // Part of the body, then the connection drops.
        write(conn, head, &rest[..cut_after.min(rest.len())]);
        let _ = conn.flush();
        let _ = conn.shutdown(std::net::Shutdown::Both);
    } else {
        write(conn, head, rest);
    }
}

/// Answers a GET as `lie` says, then closes the connection.
fn lie_about(conn: &mut TcpStream, lie: Lie, data: &[u8]) {
    const MORE: usize = 64 << 20;
    let half = &data[..data.len() / 2];
    let head = match lie {
        Lie::Endless => "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_string(),
        Lie::LongerAnnounced => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            data.len() + MORE
        ),
        Lie::ShorterAnnounced => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            half.len()
        ),
        Lie::ShorterChunked => {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".into()
        }
    };
    let _ = conn.write_all(head.as_bytes());
    match lie {
        Lie::Endless | Lie::LongerAnnounced => {
            let _ = conn.write_all(data);
            let junk = vec![b'x'; 1 << 20];
            for _ in 0..MORE >> 20 {
                if conn.write_all(&junk).is_err() {
                    break;
                }
            }
        }
        Lie::ShorterAnnounced => {
            let _ = conn.write_all(half);
        }
        Lie::ShorterChunked => {
            let _ = write!(conn, "{:x}\r\n", half.len());
            let _ = conn.write_all(half);
            let _ = conn.write_all(b"\r\n0\r\n\r\n");
        }
    }
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

fn fetch(hub: &Hub, home: &Path, extra: &[&str]) -> std::process::Output {
    command()
        .args(["dataset", "fetch"])
        .args(extra)
        .args(["hf", REPO, FILE])
        .env("HF_ENDPOINT", &hub.base)
        .env("HF_HOME", home)
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn fetch_resumes_a_cut_download_and_lands_in_the_hub_cache() {
    let data = body();
    let hub = Hub::start(data.clone());
    {
        let mut st = hub.state.lock().unwrap();
        st.cuts_left = 1;
        st.cut_after = data.len() / 3;
    }
    let home = tempfile::tempdir().unwrap();
    let o = fetch(&hub, home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(err.contains("connection broke"), "{err}");
    assert!(out.contains("matches the Hub's"), "{out}");
    assert!(out.contains(&sha256_hex(&data)), "{out}");
    assert!(
        out.contains(&format!("\"hf://datasets/{REPO}/{FILE}\"")),
        "{out}"
    );
    let ranges = hub.state.lock().unwrap().ranges.clone();
    assert_eq!(ranges.len(), 2, "{ranges:?}");
    assert_eq!(ranges[0], None);
    assert_eq!(ranges[1], Some(format!("bytes={}-", data.len() / 3)));

    // huggingface_hub's layout: refs, blob named by the etag, snapshot link.
    let repo = home.path().join("hub/datasets--acme--chats");
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    let blob = repo.join("blobs").join(sha256_hex(&data));
    assert_eq!(std::fs::read(&blob).unwrap(), data);
    let snapshot = repo.join("snapshots").join(COMMIT).join(FILE);
    assert_eq!(std::fs::read(&snapshot).unwrap(), data);
    assert!(
        std::fs::symlink_metadata(&snapshot)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // A second fetch finds it and downloads nothing.
    let o = fetch(&hub, home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.contains("already in the cache"));
    assert_eq!(hub.state.lock().unwrap().ranges.len(), 2);
}

#[test]
fn fetch_resumes_across_runs_and_rejects_a_wrong_checksum() {
    let data = body();
    let hub = Hub::start(data.clone());
    {
        let mut st = hub.state.lock().unwrap();
        st.cuts_left = 1;
        st.cut_after = data.len() / 2;
    }
    let home = tempfile::tempdir().unwrap();
    // No retries: the first run stops with the partial file kept, exit 3.
    let o = fetch(&hub, home.path(), &["--retries", "0"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert!(text(&o).1.contains("run the same command again to resume"));
    let o = fetch(&hub, home.path(), &["--retries", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).1.contains("resuming"), "{}", text(&o).1);
    let ranges = hub.state.lock().unwrap().ranges.clone();
    assert_eq!(
        ranges.last().unwrap(),
        &Some(format!("bytes={}-", data.len() / 2))
    );

    // Corrupted bytes under the announced sha256: refused, nothing left in the cache.
    let other = tempfile::tempdir().unwrap();
    hub.state.lock().unwrap().corrupt = true;
    let o = fetch(&hub, other.path(), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert!(text(&o).1.contains("sha256"), "{}", text(&o).1);
    let blobs = other.path().join("hub/datasets--acme--chats/blobs");
    assert_eq!(std::fs::read_dir(blobs).unwrap().count(), 0);
}

#[test]
fn scenarios_name_cached_files_and_say_how_to_fetch_them() {
    let data = body();
    let hub = Hub::start(data);
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::support::scenario(
        dir.path(),
        "hub.kdl",
        &format!(
            r#"
dataset "chats" {{ sharegpt "hf://datasets/{REPO}/{FILE}" count=20; }}
stage "s" {{ dataset "chats"; arrival "concurrency" clients=2; requests 4; }}
"#
        ),
    );
    let plan = |home: &Path| {
        command()
            .arg("plan")
            .arg(&scenario)
            .env("HF_HOME", home)
            .env_remove("HF_HUB_CACHE")
            .output()
            .unwrap()
    };
    let before = plan(home.path());
    assert_eq!(before.status.code(), Some(2), "{}", describe(&before));
    let err = text(&before).1;
    assert!(err.contains("is not in the local cache"), "{err}");
    assert!(
        err.contains(&format!("infermeter dataset fetch hf {REPO} {FILE}")),
        "{err}"
    );

    let o = fetch(&hub, home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let after = plan(home.path());
    assert_eq!(after.status.code(), Some(0), "{}", describe(&after));
    let out = text(&after).0;
    assert!(
        out.contains(&format!("hf://datasets/{REPO}/{FILE}")),
        "{out}"
    );
    assert!(out.contains("20 of 400 records"), "{out}");

    // A malformed reference is a validation error, pointing at it.
    let bad = crate::support::scenario(
        dir.path(),
        "bad.kdl",
        r#"
dataset "chats" { sharegpt "hf://acme/chats/x.json"; }
stage "s" { dataset "chats"; arrival "concurrency" clients=2; requests 4; }
"#,
    );
    let o = command().arg("validate").arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("only data sets can be named"),
        "{}",
        text(&o).1
    );
}

#[test]
fn a_download_of_another_length_than_announced_is_refused_and_removed() {
    let data = body();
    for lie in [
        Lie::Endless,
        Lie::LongerAnnounced,
        Lie::ShorterAnnounced,
        Lie::ShorterChunked,
    ] {
        let hub = Hub::start(data.clone());
        hub.state.lock().unwrap().lie = Some(lie);
        let home = tempfile::tempdir().unwrap();
        let o = fetch(&hub, home.path(), &[]);
        assert_eq!(o.status.code(), Some(3), "{lie:?}: {}", describe(&o));
        let err = text(&o).1;
        assert!(
            err.contains(&format!("the Hub announced {}", data.len())),
            "{lie:?}: {err}"
        );
        assert!(
            err.contains("the partial file was removed"),
            "{lie:?}: {err}"
        );
        // Not retried: a server that sends the wrong length is not a broken connection.
        assert_eq!(hub.state.lock().unwrap().ranges.len(), 1, "{lie:?}");
        // Nothing left behind: no blob, no `.incomplete`.
        let blobs = home.path().join("hub/datasets--acme--chats/blobs");
        let left: Vec<_> = std::fs::read_dir(&blobs)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{lie:?}: left behind {left:?}");
    }
}

/// A Parquet file shaped like the Hub's `openai/gsm8k` test split: `question`, `answer`.
fn gsm8k_parquet(rows: &[(&str, &str)]) -> Vec<u8> {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    let schema = parquet::schema::parser::parse_message_type(
        "message schema { required binary question (UTF8); required binary answer (UTF8); }",
    )
    .unwrap();
    let props = Arc::new(WriterProperties::builder().build());
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(&mut out, Arc::new(schema), props).unwrap();
    let mut g = w.next_row_group().unwrap();
    for column in [0, 1] {
        let cells: Vec<ByteArray> = rows
            .iter()
            .map(|r| ByteArray::from(if column == 0 { r.0 } else { r.1 }))
            .collect();
        let mut c = g.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>()
            .write_batch(&cells, None, None)
            .unwrap();
        c.close().unwrap();
    }
    g.close().unwrap();
    w.close().unwrap();
    out
}

#[test]
fn the_gsm8k_recipe_fetches_the_split_and_writes_scored_records() {
    let hub = Hub::start(gsm8k_parquet(&[
        (
            "Tom has 3 apples and buys 4. How many?",
            "3 + 4 = 7\n#### 7",
        ),
        ("A <script> costs 1,000 and two cost?", "#### 2,000"),
        ("No final answer here.", "it is 5"),
    ]));
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("gsm8k.jsonl");
    let o = command()
        .args(["dataset", "fetch", "gsm8k", "--out"])
        .arg(&out)
        .env("HF_ENDPOINT", &hub.base)
        .env("HF_HOME", home.path())
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (said, _) = text(&o);
    assert!(
        said.contains("hf://datasets/openai/gsm8k/main/test-00000-of-00001.parquet"),
        "{said}"
    );
    assert!(
        said.contains("wrote 2 records") && said.contains("1 source rows skipped"),
        "{said}"
    );
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["reference"].as_str(), rows[1]["reference"].as_str()),
        (Some("7"), Some("2000"))
    );

    // Again, over it: refused unless --force.
    let again = command()
        .args(["dataset", "fetch", "gsm8k", "--from"])
        .arg(&out)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", describe(&again));
}
