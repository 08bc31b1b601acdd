//! Inline SVG for SkillTrial's pages (the report, the ledger, the live page): an element writer
//! that escapes every text and attribute value, a linear scale with one pixel rule, and the class
//! names the stylesheet ([`STYLE`]) colours, so a chart carries no colour of its own and light,
//! dark and print themes come from the page.
//!
//! A chart is `<svg viewBox="0 0 W H" width="100%" role="img" aria-labelledby="…">` with a
//! `<title>` and a `<desc>`: it scales to its container (no fixed pixel width, so it is never
//! wider than the viewport) and a screen reader announces its title and description. Each mark
//! ([`Svg::mark`]) holds its own `<title>`, the text a pointer shows on hover. [`figure`] puts a
//! chart in its HTML figure with a caption, a legend and the [`DataTable`] of what it draws.
//!
//! **Pixel rule:** every coordinate and length is rounded to 0.1 px, half away from zero, and
//! written with exactly one decimal (`12.0`, `-3.5`; −0.0 as `0.0`). A test finds where a value
//! was drawn by writing `Linear::px(value)` and comparing the text.
//!
//! **Invariant:** nothing a caller passes reaches the output unescaped. Tag and attribute names
//! are `&'static str` chosen in code (and checked: lowercase ASCII letters, digits, `-` and `:`);
//! every value and every text goes through [`escape`], which leaves no `<`, `&`, quote or `>`
//! (so no `]]>` either) and no character XML 1.0 forbids. Hostile task names stay text inside
//! an SVG, whether the page is parsed as HTML or as XML.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use crate::outcome::Outcome;

/// Escapes text for SVG content and attribute values, parsed as HTML or as XML: `&`, `<`, `>`,
/// `"` and `'` become references; tab, line feed and carriage return become numeric references
/// (XML would otherwise fold them to spaces in an attribute, and CR LF to LF in text); every
/// other control character (C0, DEL, C1) and U+FFFE/U+FFFF become U+FFFD, the replacement
/// character, since XML 1.0 forbids them even as references.
pub fn escape(text: &str) -> Cow<'_, str> {
    let needs = |c: char| matches!(c, '&' | '<' | '>' | '"' | '\'') || is_replaced(c);
    if !text
        .chars()
        .any(|c| needs(c) || matches!(c, '\t' | '\n' | '\r'))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if is_replaced(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Control characters other than tab, LF and CR, and the two noncharacters XML forbids.
fn is_replaced(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}')
}

/// `text` cut to at most `max` characters, the last one `…` when cut: for labels in a column
/// measured in characters (the live grid, the ledger). [`fit`] cuts by an estimated width.
pub fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    if text.chars().count() <= max {
        return Cow::Borrowed(text);
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    Cow::Owned(format!("{kept}…"))
}

/// `text` cut to fit `width` user units at a font size of `font` units, ending in `…` when cut.
/// For labels in a fixed column; the whole text goes in the mark's `<title>` and the data table.
///
/// No font is measured here: each character is given a generous advance (that of DejaVu Sans,
/// the widest common sans-serif, rounded up: `i` 0.32 em, most lowercase letters 0.58 em,
/// digits 0.64 em, capitals 0.8 em, `m` `w` `M` `W` `@` `%` and anything beyond ASCII 1 em), so
/// a label fits in any of the fonts the stylesheet names.
pub fn fit(text: &str, width: f64, font: f64) -> Cow<'_, str> {
    let advance = |c: char| -> f64 {
        match c {
            'i' | 'j' | 'l' | '\'' | '|' | '!' | '.' | ',' | ':' | ';' => 0.32,
            ' ' | 'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' | '\\' | '-' | '"' | '`' => 0.42,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 1.0,
            '0'..='9' | '_' | '*' | '?' | '$' | '{' | '}' => 0.64,
            'A'..='Z' | '<' | '>' | '=' | '+' | '~' | '#' | '&' | '^' => 0.85,
            c if c.is_ascii() => 0.58,
            _ => 1.0,
        }
    };
    let budget = width / font;
    let total: f64 = text.chars().map(advance).sum();
    if total <= budget {
        return Cow::Borrowed(text);
    }
    let mut used = advance('…');
    let kept: String = text
        .chars()
        .take_while(|c| {
            used += advance(*c);
            used <= budget
        })
        .collect();
    Cow::Owned(format!("{kept}…"))
}

/// A coordinate or length in SVG user units, rounded by the pixel rule (0.1 px, half away from
/// zero). Its `Display` is the text written into the document.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Px(f64);

impl Px {
    /// `value` rounded to 0.1; a value that is not finite is written as 0.0.
    pub fn new(value: f64) -> Self {
        if !value.is_finite() {
            return Self(0.0);
        }
        let rounded = (value * 10.0).round() / 10.0;
        // −0.0 would be written "-0.0".
        Self(if rounded == 0.0 { 0.0 } else { rounded })
    }

    /// The rounded value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Px {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}", self.0)
    }
}

/// A linear map from data values (the domain) to user units (the range), e.g. a rate in [0, 1]
/// to x in [120, 700]. Values outside the domain are clamped to it, so a mark never leaves the
/// plot area; a value that is not a number maps to the range's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    domain: (f64, f64),
    range: (f64, f64),
}

impl Linear {
    /// The map sending `domain.0` to `range.0` and `domain.1` to `range.1`. An empty domain
    /// (both ends equal) sends everything to `range.0`.
    pub fn new(domain: (f64, f64), range: (f64, f64)) -> Self {
        Self { domain, range }
    }

    /// `value`'s position, unrounded.
    pub fn map(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        let span = d1 - d0;
        if value.is_nan() || span == 0.0 || !span.is_finite() {
            return r0;
        }
        let t = ((value - d0) / span).clamp(0.0, 1.0);
        r0 + t * (r1 - r0)
    }

    /// `value`'s position by the pixel rule: what the document holds.
    pub fn px(&self, value: f64) -> Px {
        Px::new(self.map(value))
    }
}

/// An attribute value: text (escaped) or a coordinate (written by the pixel rule).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Text(Cow<'a, str>),
    Px(Px),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Value<'_> {
    fn from(text: String) -> Self {
        Self::Text(Cow::Owned(text))
    }
}

impl From<Px> for Value<'_> {
    fn from(px: Px) -> Self {
        Self::Px(px)
    }
}

/// Every `f64` attribute is a coordinate or a length, so it follows the pixel rule.
impl From<f64> for Value<'_> {
    fn from(value: f64) -> Self {
        Self::Px(Px::new(value))
    }
}

/// A whole number (a count, a `data-` value) written as itself.
impl From<u64> for Value<'_> {
    fn from(value: u64) -> Self {
        Self::Text(Cow::Owned(value.to_string()))
    }
}

/// An attribute: a name chosen in code and its value.
pub type Attr<'a> = (&'static str, Value<'a>);

/// The SVG namespace, written on every chart so the markup is also a valid standalone document.
const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// Writes one `<svg>` element. Elements close in order ([`Svg::close`]); [`Svg::finish`] closes
/// whatever is still open, so the output is always well-formed.
#[derive(Debug)]
pub struct Svg {
    out: String,
    open: Vec<&'static str>,
}

impl Svg {
    /// Starts a chart `width` × `height` user units that scales to its container's width, named
    /// by its `title` and described by `desc` (both read by screen readers: the text
    /// alternative). `id` must be unique in the page; the title and desc get `{id}-title` and
    /// `{id}-desc`. `class` is added after `chart`.
    pub fn chart(id: &str, class: &str, size: (f64, f64), title: &str, desc: &str) -> Self {
        let mut svg = Self {
            out: String::new(),
            open: Vec::new(),
        };
        let (width, height) = (Px::new(size.0), Px::new(size.1));
        svg.open(
            "svg",
            &[
                ("xmlns", SVG_NS.into()),
                ("id", id.into()),
                (
                    "class",
                    format!("chart {class}").trim_end().to_owned().into(),
                ),
                ("viewBox", format!("0 0 {width} {height}").into()),
                ("width", "100%".into()),
                ("role", "img".into()),
                ("aria-labelledby", format!("{id}-title {id}-desc").into()),
            ],
        );
        svg.text("title", &[("id", format!("{id}-title").into())], title);
        svg.text("desc", &[("id", format!("{id}-desc").into())], desc);
        svg
    }

    fn start_tag(&mut self, tag: &'static str, attrs: &[Attr<'_>]) {
        debug_assert!(is_name(tag), "tag name {tag:?}");
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            debug_assert!(is_name(name), "attribute name {name:?}");
            let _ = match value {
                Value::Text(text) => write!(self.out, " {name}=\"{}\"", escape(text)),
                Value::Px(px) => write!(self.out, " {name}=\"{px}\""),
            };
        }
    }

    /// Opens `<tag attrs>`; its children follow until [`Svg::close`].
    pub fn open(&mut self, tag: &'static str, attrs: &[Attr<'_>]) -> &mut Self {
        self.start_tag(tag, attrs);
        self.out.push('>');
        self.open.push(tag);
        self
    }

    /// Closes the innermost open element (never the `<svg>` itself: [`Svg::finish`] does).
    pub fn close(&mut self) -> &mut Self {
        if self.open.len() > 1
            && let Some(tag) = self.open.pop()
        {
            let _ = write!(self.out, "</{tag}>");
        }
        self
    }

    /// An empty element, `<tag attrs/>`.
    pub fn leaf(&mut self, tag: &'static str, attrs: &[Attr<'_>]) -> &mut Self {
        self.start_tag(tag, attrs);
        self.out.push_str("/>");
        self
    }

    /// An element holding only text, `<tag attrs>text</tag>` (a label, a `<title>`).
    pub fn text(&mut self, tag: &'static str, attrs: &[Attr<'_>], text: &str) -> &mut Self {
        self.start_tag(tag, attrs);
        let _ = write!(self.out, ">{}</{tag}>", escape(text));
        self
    }

    /// A mark with its hover text: `<tag attrs><title>hover</title></tag>`.
    pub fn mark(&mut self, tag: &'static str, attrs: &[Attr<'_>], hover: &str) -> &mut Self {
        self.start_tag(tag, attrs);
        let _ = write!(self.out, "><title>{}</title></{tag}>", escape(hover));
        self
    }

    /// Closes every open element and returns the markup.
    pub fn finish(mut self) -> String {
        while let Some(tag) = self.open.pop() {
            let _ = write!(self.out, "</{tag}>");
        }
        self.out
    }
}

/// The numbers behind a chart, as a table: header cells and rows of text, escaped when written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataTable {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl DataTable {
    /// An empty table with these column headers.
    pub fn new(head: &[&str]) -> Self {
        Self {
            head: head.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// The table as HTML, every cell escaped.
    pub fn html(&self) -> String {
        let mut h = String::from("<table><thead><tr>");
        for cell in &self.head {
            let _ = write!(h, "<th>{}</th>", escape(cell));
        }
        h.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            h.push_str("<tr>");
            for cell in row {
                let _ = write!(h, "<td>{}</td>", escape(cell));
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table>");
        h
    }
}

/// A chart in its HTML figure: the SVG ([`Svg::finish`]), a caption saying what it answers, a
/// legend of (colour class, label) swatches, and the data table behind it in
/// `<details class="data">` (opened when printing by [`STYLE`]). Every text is escaped.
pub fn figure(svg: String, caption: &str, legend: &[(&str, &str)], table: &DataTable) -> String {
    let mut h = String::from("<figure class=\"chart\">");
    h.push_str(&svg);
    let _ = write!(h, "<figcaption>{}", escape(caption));
    if !legend.is_empty() {
        h.push_str("<span class=\"legend\">");
        for (class, label) in legend {
            let _ = write!(
                h,
                "<span class=\"swatch {}\"></span>{}",
                escape(class),
                escape(label)
            );
        }
        h.push_str("</span>");
    }
    let _ = write!(
        h,
        "</figcaption><details class=\"data\"><summary>Data table</summary>{}</details></figure>",
        table.html()
    );
    h
}

/// A tag or attribute name we write: lowercase ASCII letters, digits, `-` and `:`, starting with
/// a letter (`viewBox` is the one camel-case name SVG needs).
fn is_name(name: &str) -> bool {
    name == "viewBox"
        || name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == ':')
}

/// The class that colours a trial's outcome; `None` is a trial still waiting (`o-pending`).
pub fn outcome_class(outcome: Option<Outcome>) -> &'static str {
    match outcome {
        None => "o-pending",
        Some(Outcome::Pass) => "o-pass",
        Some(Outcome::Fail) => "o-fail",
        Some(Outcome::InvalidOutput) => "o-invalid_output",
        Some(Outcome::UnsupportedCase) => "o-unsupported",
        Some(Outcome::InfrastructureError) => "o-infrastructure",
        Some(Outcome::Unknown) => "o-unknown",
        Some(Outcome::Interrupted) => "o-interrupted",
        Some(Outcome::NotRun) => "o-not_run",
    }
}

/// The class that colours an arm: `arm-baseline`, `arm-a`, `arm-b`, or `arm-other`.
pub fn arm_class(arm: &str) -> &'static str {
    match arm {
        "baseline" => "arm-baseline",
        "a" => "arm-a",
        "b" => "arm-b",
        _ => "arm-other",
    }
}

/// The class that colours a task's verdict label (docs/reports.md): B against A `improvement`,
/// `regression`, `same`; a skill against the baseline `skill needed`, `no-op`, `broken`, `still
/// failing`; `v-none` for no verdict yet or a label this version does not know.
pub fn verdict_class(label: Option<&str>) -> &'static str {
    match label {
        Some("improvement") => "v-improvement",
        Some("regression") => "v-regression",
        Some("same") => "v-same",
        Some("skill needed") => "v-skill-needed",
        Some("no-op") => "v-no-op",
        Some("broken") => "v-broken",
        Some("still failing") => "v-still-failing",
        _ => "v-none",
    }
}

/// The charts' stylesheet as a literal, so a page's `<style>` (whose hash its CSP allows) can
/// `concat!` it. Colours are custom properties per theme (light; dark by system preference unless
/// the page says `data-theme=light`; dark when it says `data-theme=dark`), then print. It relies
/// on the page defining `--fg`, `--muted`, `--line` and `--card`, as the report's stylesheet does.
macro_rules! chart_style {
    () => {
        r#"
:root{--o-pass:#1f7a4d;--o-fail:#c0392b;--o-invalid:#c26a00;--o-unsupported:#7d5ba6;--o-infra:#5b6b82;--o-unknown:#80858f;--o-interrupted:#b5651d;--o-notrun:#d4d6dc;--o-pending:#eceef2;--arm-baseline:#6b7280;--arm-a:#3451b2;--arm-b:#c2410c;--v-good:#1f7a4d;--v-bad:#c0392b;--v-same:#6b7280;--v-none:#80858f;--reserved:#a87a0a}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){--o-pass:#5fd39b;--o-fail:#ff8a80;--o-invalid:#f0a040;--o-unsupported:#b79ce0;--o-infra:#8d9bb0;--o-unknown:#80858f;--o-interrupted:#d98d4a;--o-notrun:#464a55;--o-pending:#2c2f37;--arm-baseline:#9ca3af;--arm-a:#8ea2ff;--arm-b:#fb923c;--v-good:#5fd39b;--v-bad:#ff8a80;--v-same:#9ca3af;--v-none:#80858f;--reserved:#c9a43c}}
:root[data-theme=dark]{--o-pass:#5fd39b;--o-fail:#ff8a80;--o-invalid:#f0a040;--o-unsupported:#b79ce0;--o-infra:#8d9bb0;--o-unknown:#80858f;--o-interrupted:#d98d4a;--o-notrun:#464a55;--o-pending:#2c2f37;--arm-baseline:#9ca3af;--arm-a:#8ea2ff;--arm-b:#fb923c;--v-good:#5fd39b;--v-bad:#ff8a80;--v-same:#9ca3af;--v-none:#80858f;--reserved:#c9a43c}
svg.chart{display:block;width:100%;max-width:520px;height:auto;font:12px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
svg.chart text{fill:var(--fg)}svg.chart text.p{font-weight:600}svg.chart text.k{fill:var(--muted)}svg.chart .axis{stroke:var(--line);stroke-width:1}svg.chart .zero{stroke:var(--muted);stroke-width:1}svg.chart .grid{stroke:var(--line);stroke-width:1;stroke-dasharray:2 3}
svg.chart .whisker{stroke:var(--fg);stroke-width:1.5;fill:none}svg.chart a:focus-visible circle,svg.chart a:hover circle{stroke:var(--fg);stroke-width:2}
.o-pass{fill:var(--o-pass)}.o-fail{fill:var(--o-fail)}.o-invalid_output{fill:var(--o-invalid)}.o-unsupported{fill:var(--o-unsupported)}.o-infrastructure{fill:var(--o-infra)}.o-unknown{fill:var(--o-unknown)}.o-interrupted{fill:var(--o-interrupted)}.o-not_run{fill:var(--o-notrun)}.o-pending{fill:var(--o-pending)}
.arm-baseline{fill:var(--arm-baseline)}.arm-a{fill:var(--arm-a)}.arm-b{fill:var(--arm-b)}.arm-other{fill:var(--muted)}
.v-improvement,.v-skill-needed{fill:var(--v-good)}.v-regression,.v-broken{fill:var(--v-bad)}.v-same,.v-no-op,.v-still-failing{fill:var(--v-same)}.v-still-failing{fill-opacity:.45}.v-none{fill:var(--v-none)}
.reserved{fill:var(--reserved)}.track{fill:var(--line)}svg.chart .seg{stroke:var(--card);stroke-width:1}svg.chart rect.o-not_run,svg.chart rect.o-pending{stroke:var(--muted);stroke-width:.6}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:baseline}.swatch.o-pass{background:var(--o-pass)}.swatch.o-fail{background:var(--o-fail)}.swatch.o-invalid_output{background:var(--o-invalid)}.swatch.o-unsupported{background:var(--o-unsupported)}.swatch.o-infrastructure{background:var(--o-infra)}.swatch.o-unknown{background:var(--o-unknown)}.swatch.o-interrupted{background:var(--o-interrupted)}.swatch.o-not_run{background:var(--o-notrun)}.swatch.o-pending{background:var(--o-pending)}.swatch.v-improvement,.swatch.v-skill-needed{background:var(--v-good)}.swatch.v-regression,.swatch.v-broken{background:var(--v-bad)}.swatch.v-same,.swatch.v-no-op,.swatch.v-still-failing{background:var(--v-same)}.swatch.v-none{background:var(--v-none)}.swatch.reserved{background:var(--reserved)}.swatch.arm-baseline{background:var(--arm-baseline)}.swatch.arm-a{background:var(--arm-a)}.swatch.arm-b{background:var(--arm-b)}
figure.chart{margin:10px 0 16px;max-width:100%}figure.chart figcaption{font-size:13px;color:var(--muted);margin:4px 0}.legend{font-size:12.5px;color:var(--muted)}
@media print{svg.chart text{fill:#000}svg.chart .axis,svg.chart .grid{stroke:#999}svg.chart .whisker{stroke:#000}details.data::details-content{content-visibility:visible;display:block}figure.chart{break-inside:avoid}}
"#
    };
}
pub(crate) use chart_style;

/// The charts' stylesheet ([`chart_style`]'s text).
pub const STYLE: &str = chart_style!();

#[cfg(test)]
pub(crate) mod xml {
    //! A strict reader for the SVG this crate writes, for tests: elements, attributes and text,
    //! with the five named references and numeric ones. Anything else — an unescaped `<` or
    //! `&`, an unquoted or repeated attribute, a mismatched end tag — is an error, so a test that
    //! parses a chart also proves its escaping.

    use std::collections::BTreeMap;

    /// An element with its attributes (references resolved) and children.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Element {
        pub name: String,
        pub attrs: BTreeMap<String, String>,
        pub children: Vec<Node>,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Node {
        Element(Element),
        Text(String),
    }

    impl Element {
        /// The attribute `name`, or an empty string.
        pub fn attr(&self, name: &str) -> &str {
            self.attrs.get(name).map_or("", String::as_str)
        }

        /// Whether `class` is one of this element's classes.
        pub fn has_class(&self, class: &str) -> bool {
            self.attr("class").split_whitespace().any(|c| c == class)
        }

        /// This element and every descendant, depth first.
        pub fn descendants(&self) -> Vec<&Element> {
            let mut out = vec![self];
            for child in &self.children {
                if let Node::Element(e) = child {
                    out.extend(e.descendants());
                }
            }
            out
        }

        /// The descendants (this one included) named `name`.
        pub fn all(&self, name: &str) -> Vec<&Element> {
            self.descendants()
                .into_iter()
                .filter(|e| e.name == name)
                .collect()
        }

        /// The text directly inside this element.
        pub fn text(&self) -> String {
            self.children
                .iter()
                .filter_map(|c| match c {
                    Node::Text(t) => Some(t.as_str()),
                    Node::Element(_) => None,
                })
                .collect()
        }

        /// The text of the first `<title>` child: a mark's hover text.
        pub fn title(&self) -> Option<String> {
            self.children.iter().find_map(|c| match c {
                Node::Element(e) if e.name == "title" => Some(e.text()),
                _ => None,
            })
        }
    }

    /// Parses one element (surrounding whitespace allowed), or says where it is malformed.
    pub fn parse(text: &str) -> Result<Element, String> {
        let mut reader = Reader { text, at: 0 };
        reader.skip_space();
        let element = reader.element()?;
        reader.skip_space();
        if reader.at != text.len() {
            return Err(format!("trailing text at {}", reader.at));
        }
        Ok(element)
    }

    struct Reader<'a> {
        text: &'a str,
        at: usize,
    }

    impl Reader<'_> {
        fn rest(&self) -> &str {
            &self.text[self.at..]
        }

        fn skip_space(&mut self) {
            let n = self.rest().len() - self.rest().trim_start().len();
            self.at += n;
        }

        fn expect(&mut self, s: &str) -> Result<(), String> {
            if self.rest().starts_with(s) {
                self.at += s.len();
                Ok(())
            } else {
                Err(format!("expected {s:?} at {}", self.at))
            }
        }

        fn name(&mut self) -> Result<String, String> {
            let n = self
                .rest()
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':'))
                .unwrap_or(self.rest().len());
            if n == 0 {
                return Err(format!("expected a name at {}", self.at));
            }
            let name = self.rest()[..n].to_owned();
            self.at += n;
            Ok(name)
        }

        fn element(&mut self) -> Result<Element, String> {
            self.expect("<")?;
            let name = self.name()?;
            let mut attrs = BTreeMap::new();
            loop {
                let before = self.at;
                self.skip_space();
                if self.rest().starts_with("/>") {
                    self.at += 2;
                    return Ok(Element {
                        name,
                        attrs,
                        children: Vec::new(),
                    });
                }
                if self.rest().starts_with('>') {
                    self.at += 1;
                    break;
                }
                if self.at == before {
                    return Err(format!("expected space before an attribute at {}", self.at));
                }
                let key = self.name()?;
                self.expect("=\"")?;
                let end = self
                    .rest()
                    .find('"')
                    .ok_or_else(|| format!("unterminated attribute {key}"))?;
                let raw = &self.rest()[..end];
                if raw.contains('<') {
                    return Err(format!("unescaped < in attribute {key}"));
                }
                let value = unescape(raw)?;
                self.at += end + 1;
                if attrs.insert(key.clone(), value).is_some() {
                    return Err(format!("repeated attribute {key}"));
                }
            }
            let mut children = Vec::new();
            loop {
                if self.rest().starts_with("</") {
                    self.at += 2;
                    let end = self.name()?;
                    if end != name {
                        return Err(format!("</{end}> closes <{name}> at {}", self.at));
                    }
                    self.expect(">")?;
                    return Ok(Element {
                        name,
                        attrs,
                        children,
                    });
                }
                if self.rest().starts_with('<') {
                    children.push(Node::Element(self.element()?));
                    continue;
                }
                let end = self
                    .rest()
                    .find('<')
                    .ok_or_else(|| format!("<{name}> never closed"))?;
                let raw = &self.rest()[..end];
                if raw.contains('>') {
                    return Err(format!("unescaped > in the text of <{name}>"));
                }
                children.push(Node::Text(unescape(raw)?));
                self.at += end;
            }
        }
    }

    /// Resolves references; a bare `&` or an unknown name is an error.
    fn unescape(raw: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = raw;
        while let Some(i) = rest.find('&') {
            out.push_str(&rest[..i]);
            let end = rest[i..]
                .find(';')
                .ok_or_else(|| format!("bare & in {raw:?}"))?;
            let name = &rest[i + 1..i + end];
            let c = match name {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                _ => {
                    let code = match name.strip_prefix("#x") {
                        Some(hex) => u32::from_str_radix(hex, 16),
                        None => name
                            .strip_prefix('#')
                            .ok_or_else(|| format!("unknown reference &{name};"))?
                            .parse(),
                    }
                    .map_err(|_| format!("bad reference &{name};"))?;
                    char::from_u32(code).ok_or_else(|| format!("bad reference &{name};"))?
                }
            };
            out.push(c);
            rest = &rest[i + end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::xml::parse;
    use super::*;

    const HOSTILE: &str = "</text><script>alert(1)</script>&amp; \"q\" 'a' ]]> <![CDATA[x]]>\u{0}\u{1b}\u{7f}\u{85}\t\r\n\u{FFFF}";

    #[test]
    fn escape_leaves_no_markup_quote_or_forbidden_character() {
        let out = escape(HOSTILE);
        for bad in [
            '<', '>', '"', '\'', '\0', '\u{1b}', '\u{7f}', '\u{85}', '\r', '\n', '\t',
        ] {
            assert!(!out.contains(bad), "{bad:?} survived: {out}");
        }
        assert!(!out.contains("]]>"));
        assert!(!out.contains('\u{FFFF}'));
        // Every & starts one of the references the writer uses.
        for (i, _) in out.match_indices('&') {
            let reference = &out[i..i + out[i..].find(';').unwrap() + 1];
            assert!(
                [
                    "&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&#9;", "&#10;", "&#13;"
                ]
                .contains(&reference),
                "{reference} in {out}"
            );
        }
        assert_eq!(
            escape("plain task-name_1"),
            Cow::Borrowed("plain task-name_1")
        );
    }

    #[test]
    fn a_hostile_label_title_and_attribute_read_back_as_the_same_text() {
        // Given a chart whose title, description, label, hover text and attribute are hostile ...
        let mut svg = Svg::chart("c1", "forest", (200.0, 100.0), HOSTILE, HOSTILE);
        svg.open(
            "a",
            &[("href", "#evidence".into()), ("data-task", HOSTILE.into())],
        )
        .mark("circle", &[("cx", 10.0.into()), ("r", 4.0.into())], HOSTILE)
        .close()
        .text("text", &[("x", 1.0.into())], HOSTILE);
        let markup = svg.finish();
        // ... then it parses strictly as one <svg>, with no element the text tried to open ...
        let root = parse(&markup).unwrap_or_else(|e| panic!("{e}: {markup}"));
        assert_eq!(root.name, "svg");
        let names: Vec<&str> = root.descendants().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["svg", "title", "desc", "a", "circle", "title", "text"]
        );
        // ... and every text reads back as the original, control characters replaced.
        let expected: String = HOSTILE
            .chars()
            .map(|c| if is_replaced(c) { '\u{FFFD}' } else { c })
            .collect();
        assert_eq!(root.all("text")[0].text(), expected);
        assert_eq!(root.all("a")[0].attr("data-task"), expected);
        assert_eq!(root.all("circle")[0].title().unwrap(), expected);
        assert_eq!(root.all("desc")[0].text(), expected);
    }

    #[test]
    fn a_figure_holds_the_chart_its_caption_legend_and_escaped_data_table() {
        let svg = Svg::chart("f", "", (10.0, 10.0), "t", "d").finish();
        let mut table = DataTable::new(&["task", "n"]);
        table.rows.push(vec![HOSTILE.to_owned(), "3".to_owned()]);
        let h = figure(svg.clone(), HOSTILE, &[("o-pass", HOSTILE)], &table);
        assert!(h.starts_with(&format!("<figure class=\"chart\">{svg}<figcaption>")));
        assert!(h.ends_with("<td>3</td></tr></tbody></table></details></figure>"));
        assert!(h.contains("<details class=\"data\"><summary>Data table</summary><table><thead><tr><th>task</th><th>n</th></tr></thead>"));
        assert!(h.contains("<span class=\"swatch o-pass\"></span>"));
        // The hostile text appears three times, escaped each time, and never as markup.
        assert_eq!(h.matches(&*escape(HOSTILE)).count(), 3);
        assert!(!h.contains("<script>") && !h.contains("</text>"));
    }

    #[test]
    fn a_chart_scales_to_its_container_and_names_its_text_alternative() {
        let markup = Svg::chart("rate", "", (720.0, 180.25), "Success rate", "A 50%").finish();
        let root = parse(&markup).unwrap();
        assert_eq!(root.attr("viewBox"), "0 0 720.0 180.3");
        assert_eq!(root.attr("width"), "100%");
        assert!(
            !root.attrs.contains_key("height"),
            "a fixed height would not scale"
        );
        assert_eq!(root.attr("role"), "img");
        assert_eq!(root.attr("class"), "chart");
        assert!(root.has_class("chart") && !root.has_class("char"));
        assert_eq!(root.attr("aria-labelledby"), "rate-title rate-desc");
        assert_eq!(root.all("title")[0].attr("id"), "rate-title");
        assert_eq!(root.all("desc")[0].text(), "A 50%");
    }

    #[test]
    fn finish_closes_what_is_open_and_close_never_closes_the_svg() {
        let mut svg = Svg::chart("g", "x", (10.0, 10.0), "t", "d");
        svg.close()
            .close()
            .open("g", &[])
            .open("g", &[])
            .leaf("rect", &[]);
        let root = parse(&svg.finish()).unwrap();
        assert_eq!(root.all("g").len(), 2);
        assert_eq!(root.all("rect").len(), 1);
    }

    #[test]
    fn the_pixel_rule_rounds_to_a_tenth_half_away_from_zero() {
        assert_eq!(Px::new(12.0).to_string(), "12.0");
        assert_eq!(Px::new(12.25).to_string(), "12.3");
        assert_eq!(Px::new(12.249).to_string(), "12.2");
        assert_eq!(Px::new(-3.45).to_string(), "-3.5");
        assert_eq!(Px::new(-0.04).to_string(), "0.0");
        assert_eq!(Px::new(f64::NAN).to_string(), "0.0");
        assert_eq!(Px::new(f64::INFINITY).to_string(), "0.0");
    }

    #[test]
    fn a_linear_scale_maps_its_domain_onto_its_range_and_clamps() {
        let x = Linear::new((0.0, 1.0), (100.0, 700.0));
        assert_eq!(x.px(0.0).to_string(), "100.0");
        assert_eq!(x.px(1.0).to_string(), "700.0");
        assert_eq!(x.px(0.123_456).to_string(), "174.1");
        // Outside the domain: clamped, so no mark leaves the plot.
        assert_eq!(x.px(-2.0).to_string(), "100.0");
        assert_eq!(x.px(7.0).to_string(), "700.0");
        assert_eq!(x.px(f64::NAN).to_string(), "100.0");
        // A reversed range (y grows downwards) and a symmetric domain (a difference).
        let y = Linear::new((-1.0, 1.0), (200.0, 0.0));
        assert_eq!(y.px(0.0).to_string(), "100.0");
        assert_eq!(y.px(0.5).to_string(), "50.0");
        // An empty domain sends everything to the range's start.
        assert_eq!(
            Linear::new((3.0, 3.0), (5.0, 9.0)).px(3.0).to_string(),
            "5.0"
        );
    }

    #[test]
    fn labels_are_cut_with_an_ellipsis() {
        // A usual task name fits a 130-unit column at 12 units ...
        assert_eq!(
            fit("acct-t22-fzyeg-mint", 130.0, 12.0),
            "acct-t22-fzyeg-mint"
        );
        // ... a longer one is cut, and markup, capitals and wide letters take more room.
        assert_eq!(
            fit("tx-legacy-nonce-bonk-with-memo", 130.0, 12.0),
            "tx-legacy-nonce-bo…"
        );
        assert_eq!(
            fit("</text></svg><img src=x>", 130.0, 12.0),
            "</text></svg><i…"
        );
        assert_eq!(fit("MMMMMMMMMMMM", 60.0, 12.0), "MMMM…");
        assert_eq!(fit("éééééééé", 48.0, 12.0), "ééé…");
        assert_eq!(fit("", 10.0, 12.0), "");
    }

    #[test]
    fn every_outcome_has_a_class_the_stylesheet_colours() {
        let classes = Outcome::ALL
            .iter()
            .map(|o| outcome_class(Some(*o)))
            .chain([outcome_class(None)]);
        for class in classes {
            assert!(
                STYLE.contains(&format!(".{class}{{fill:")),
                "{class} uncoloured"
            );
            assert!(
                STYLE.contains(&format!(".swatch.{class}{{")),
                "{class} has no swatch"
            );
        }
        for label in [
            "improvement",
            "regression",
            "same",
            "skill needed",
            "no-op",
            "broken",
            "still failing",
        ] {
            let class = verdict_class(Some(label));
            assert_ne!(class, "v-none", "{label}");
            assert!(STYLE.contains(&format!(".{class}")), "{class} uncoloured");
        }
        for arm in ["baseline", "a", "b"] {
            assert!(STYLE.contains(&format!(".{}{{fill:", arm_class(arm))));
        }
    }

    #[test]
    fn the_dark_theme_is_the_same_whether_chosen_by_the_system_or_the_toggle() {
        let after = |selector: &str| {
            let start = STYLE.find(selector).unwrap() + selector.len();
            STYLE[start..start + STYLE[start..].find('}').unwrap()].to_owned()
        };
        assert_eq!(
            after(":root:not([data-theme=light]){"),
            after(":root[data-theme=dark]{")
        );
    }
}
