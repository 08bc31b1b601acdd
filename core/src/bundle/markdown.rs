//! Just enough Markdown to tell what a reader sees from what only the model reads.
//!
//! Links and hidden text exist only in Markdown *prose*: outside fenced code blocks, outside
//! `<pre>`, `<script>` and `<style>` blocks, and outside inline code spans. Code is text the
//! model reads, not links: `[TOKENS.SOL]: 9`, `src={nft.image}` and `fn(...args)` are not link
//! targets. HTML comments in prose are invisible once rendered, so they are reported as hidden
//! text (with their content, which the grader rule then reads like any other line).

/// One prose line: its 1-based number and what a reader sees of it (code spans and HTML
/// comments blanked out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProseLine {
    /// 1-based line number.
    pub line: usize,
    /// The visible prose, code spans and comments replaced by spaces.
    pub visible: String,
}

/// An HTML comment in prose: where it opens and its content (joined with spaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// 1-based line on which `<!--` stands.
    pub line: usize,
    /// The text between `<!--` and `-->` (or the end of the file, if never closed).
    pub content: String,
    /// Whether the comment is closed; an unclosed one hides the rest of the file.
    pub closed: bool,
    /// 1-based line on which it ends (the last line, if never closed).
    pub last_line: usize,
}

/// A Markdown file split into visible prose and hidden comments.
#[derive(Debug, Default)]
pub struct Document {
    /// Prose lines, in order.
    pub prose: Vec<ProseLine>,
    /// HTML comments found in prose, in order.
    pub comments: Vec<Comment>,
}

/// Whether a bundle path is Markdown.
pub fn is_markdown(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && ["md", "markdown", "mdx", "mdown", "mkd", "mkdn"]
                .iter()
                .any(|m| m.eq_ignore_ascii_case(ext))
    })
}

/// An open fence: its character and length.
struct Fence {
    marker: char,
    len: usize,
}

fn fence_open(line: &str) -> Option<Fence> {
    let trimmed = line.trim_start();
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    if len < 3 {
        return None;
    }
    // A backtick fence's info string may not hold a backtick (that is an inline span).
    if marker == '`' && trimmed[len..].contains('`') {
        return None;
    }
    Some(Fence { marker, len })
}

fn fence_closes(line: &str, fence: &Fence) -> bool {
    let trimmed = line.trim();
    let len = trimmed.chars().take_while(|c| *c == fence.marker).count();
    len >= fence.len && trimmed.chars().skip(len).all(char::is_whitespace)
}

/// Raw HTML blocks whose content is code, not prose.
const RAW_BLOCKS: &[&str] = &["pre", "script", "style", "textarea"];

fn raw_block_open(line: &str) -> Option<&'static str> {
    let trimmed = line.trim_start().to_ascii_lowercase();
    RAW_BLOCKS.iter().copied().find(|tag| {
        trimmed
            .strip_prefix('<')
            .and_then(|rest| rest.strip_prefix(tag))
            .is_some_and(|rest| rest.starts_with(['>', ' ', '\t']) || rest.is_empty())
    })
}

/// Replaces inline code spans (`` `x` ``, ``` ``x`` ```) with spaces, one per byte so that byte
/// offsets still match the line; an unmatched run of backticks stays literal, as CommonMark says.
pub fn blank_code_spans(line: &str) -> String {
    if !line.contains('`') {
        return line.to_owned();
    }
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let byte_at = |k: usize| chars.get(k).map_or(line.len(), |(at, _)| *at);
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    let mut i = 0;
    while i < chars.len() {
        if chars[i].1 != '`' {
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|(_, c)| *c == '`').count();
        let mut j = i + run;
        let mut closed = None;
        while j < chars.len() {
            if chars[j].1 == '`' {
                let other = chars[j..].iter().take_while(|(_, c)| *c == '`').count();
                if other == run {
                    closed = Some(j + other);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                let (from, to) = (byte_at(i), byte_at(end));
                out.push_str(&line[copied..from]);
                out.extend(std::iter::repeat_n(' ', to - from));
                copied = to;
                i = end;
            }
            None => i += run,
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// Splits Markdown text into prose lines and the HTML comments hidden in them.
pub fn parse(text: &str) -> Document {
    let mut doc = Document::default();
    let mut fence: Option<Fence> = None;
    let mut raw: Option<&'static str> = None;
    let mut comment: Option<Comment> = None;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if comment.is_none() {
            if let Some(open) = &fence {
                if fence_closes(line, open) {
                    fence = None;
                }
                continue;
            }
            if let Some(tag) = raw {
                if line.to_ascii_lowercase().contains(&format!("</{tag}")) {
                    raw = None;
                }
                continue;
            }
            if let Some(open) = fence_open(line) {
                fence = Some(open);
                continue;
            }
            if let Some(tag) = raw_block_open(line) {
                if !line.to_ascii_lowercase().contains(&format!("</{tag}")) {
                    raw = Some(tag);
                }
                continue;
            }
        }
        // Prose: blank code spans first (a `<!--` inside backticks is shown, not hidden), then
        // cut out comments.
        let spans_blanked = if comment.is_some() {
            line.to_owned()
        } else {
            blank_code_spans(line)
        };
        let mut visible = String::with_capacity(spans_blanked.len());
        let mut rest = spans_blanked.as_str();
        // Offsets in `rest` and `raw` match: blanking keeps byte lengths.
        let mut raw = line;
        loop {
            match &mut comment {
                None => match rest.find("<!--") {
                    Some(at) => {
                        visible.push_str(&rest[..at]);
                        raw = &raw[at + 4..];
                        comment = Some(Comment {
                            line: line_no,
                            content: String::new(),
                            closed: false,
                            last_line: line_no,
                        });
                        rest = &rest[at + 4..];
                    }
                    None => {
                        visible.push_str(rest);
                        break;
                    }
                },
                Some(open) => match rest.find("-->") {
                    Some(at) => {
                        push_content(&mut open.content, &raw[..at]);
                        open.closed = true;
                        open.last_line = line_no;
                        doc.comments.extend(comment.take());
                        rest = &rest[at + 3..];
                        raw = &raw[at + 3..];
                    }
                    None => {
                        push_content(&mut open.content, raw);
                        open.last_line = line_no;
                        break;
                    }
                },
            }
        }
        doc.prose.push(ProseLine {
            line: line_no,
            visible,
        });
    }
    doc.comments.extend(comment);
    doc
}

fn push_content(content: &mut String, piece: &str) {
    let piece = piece.trim();
    if piece.is_empty() {
        return;
    }
    if !content.is_empty() {
        content.push(' ');
    }
    content.push_str(piece);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first, obviously correct form of `blank_code_spans` (one `String` per character),
    /// kept as the reference the faster one must agree with.
    fn blank_code_spans_reference(line: &str) -> String {
        let chars: Vec<char> = line.chars().collect();
        let mut out: Vec<String> = chars.iter().map(char::to_string).collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '`' {
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            let mut j = i + run;
            let mut closed = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let other = chars[j..].iter().take_while(|c| **c == '`').count();
                    if other == run {
                        closed = Some(j + other);
                        break;
                    }
                    j += other;
                } else {
                    j += 1;
                }
            }
            match closed {
                Some(end) => {
                    for c in &mut out[i..end] {
                        *c = " ".repeat(c.len());
                    }
                    i = end;
                }
                None => i += run,
            }
        }
        out.concat()
    }

    #[test]
    fn blanking_code_spans_keeps_byte_offsets_and_agrees_with_the_reference() {
        let lines = [
            "",
            "no code here",
            "one `span` here",
            "``double `tick` span`` and `one`",
            "unmatched ``` run and `ok`",
            "`<!-- shown -->` <!-- hidden -->",
            "ünïcödé `ßpän → ☃` tail `末尾`",
            "`a``b` ``c`` ```",
            "trailing `",
            "``",
            "`é`",
        ];
        for line in lines {
            let fast = blank_code_spans(line);
            assert_eq!(fast, blank_code_spans_reference(line), "{line:?}");
            assert_eq!(fast.len(), line.len(), "{line:?}");
        }
    }

    fn visible(text: &str) -> Vec<(usize, String)> {
        parse(text)
            .prose
            .into_iter()
            .map(|p| (p.line, p.visible.trim().to_owned()))
            .collect()
    }

    #[test]
    fn fences_raw_blocks_and_spans_are_not_prose() {
        let text = "a\n```ts\n[TOKENS.SOL]: 9,\n```\nb `[x](y)` c\n~~~~\n~~~\n[z](w)\n~~~~\n<script>\nx[0](y)\n</script>\nd";
        assert_eq!(
            visible(text),
            vec![
                (1, "a".to_owned()),
                (5, format!("b{}c", " ".repeat(10))),
                (13, "d".to_owned())
            ]
        );
    }

    #[test]
    fn comments_span_lines_and_are_cut_from_prose() {
        let doc = parse("x <!-- `é` one --> y\n<!--\ntwo\n-->\n`<!-- shown -->`\n<!-- open");
        let comments: Vec<(usize, &str, bool)> = doc
            .comments
            .iter()
            .map(|c| (c.line, c.content.as_str(), c.closed))
            .collect();
        assert_eq!(
            comments,
            vec![(1, "`é` one", true), (2, "two", true), (6, "open", false)]
        );
        assert_eq!(doc.prose[0].visible, "x  y");
    }

    #[test]
    fn markdown_is_known_by_extension() {
        assert!(is_markdown("SKILL.md"));
        assert!(is_markdown("docs/a.MDX"));
        assert!(!is_markdown("assets/viewer.html"));
        assert!(!is_markdown(".md"));
    }
}
