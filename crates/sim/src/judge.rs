//! The simulator as an LLM judge (docs/quality.md, "LLM judge"): a chat request whose system
//! message starts with [`JUDGE_MARKER`] is answered `Score: K` instead of an answer, so a run
//! can judge its answers with the embedded simulator over real HTTP. With a reference shown,
//! `K` is the top of the scale when the answer holds one of the reference's lines
//! (case-insensitively), else 1; without one, `K` is drawn from the answer's text, the same
//! for the same answer in every run.

use infermeter_words::protocol::JUDGE_MARKER;
use serde_json::Value;

/// `Score: K` for a judge request, as the answer's pieces; `None` for any other request.
pub(crate) fn judge_pieces(body: &[u8]) -> Option<Vec<Box<str>>> {
    // Cheap refusal first: most requests are not a judge's.
    memchr_marker(body)?;
    let v: Value = serde_json::from_slice(body).ok()?;
    let ms = v.get("messages")?.as_array()?;
    let system = ms.first()?.get("content")?.as_str()?;
    if !system.starts_with(JUDGE_MARKER) {
        return None;
    }
    let scale = scale_of(system).unwrap_or(5);
    let user = ms.get(1)?.get("content")?.as_str()?;
    let answer = section(user, "[Answer]\n", "\n[End of answer]")?.to_lowercase();
    let score = match section(user, "[Reference]\n", "\n\n[Answer]") {
        Some(r) => {
            let holds = r
                .lines()
                .map(|l| l.trim().to_lowercase())
                .any(|l| !l.is_empty() && answer.contains(&l));
            if holds { scale } else { 1 }
        }
        None => 1 + (fnv(&answer) % u64::from(scale)) as u32,
    };
    Some(vec![
        Box::from("Score:"),
        Box::from(format!(" {score}").as_str()),
    ])
}

fn memchr_marker(body: &[u8]) -> Option<()> {
    let m = JUDGE_MARKER.as_bytes();
    body.windows(m.len()).any(|w| w == m).then_some(())
}

/// The top score the system message asks for (`… to N (best)`).
fn scale_of(system: &str) -> Option<u32> {
    let at = system.find(" (best)")?;
    system[..at]
        .rsplit(' ')
        .next()?
        .parse()
        .ok()
        .filter(|&n| n >= 2)
}

fn section<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(reference: Option<&str>, answer: &str) -> Vec<u8> {
        let mut user = "[Question]\nWhat is 1 + 1?\n".to_string();
        if let Some(r) = reference {
            user.push_str(&format!("\n[Reference]\n{r}\n"));
        }
        user.push_str(&format!("\n[Answer]\n{answer}\n[End of answer]"));
        let system =
            format!("{JUDGE_MARKER}\nrubric … from 1 (worst) to 7 (best), and nothing else.");
        serde_json::json!({"messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn judges_by_the_reference_on_the_asked_scale() {
        let said = |p: Vec<Box<str>>| p.concat();
        assert_eq!(
            said(judge_pieces(&body(Some("2"), "The answer is 2.")).unwrap()),
            "Score: 7"
        );
        assert_eq!(
            said(judge_pieces(&body(Some("2"), "The answer is 3.")).unwrap()),
            "Score: 1"
        );
        let free = said(judge_pieces(&body(None, "anything")).unwrap());
        assert_eq!(free, said(judge_pieces(&body(None, "anything")).unwrap()));
        assert!(judge_pieces(br#"{"messages":[{"role":"user","content":"hi"}]}"#).is_none());
    }
}
