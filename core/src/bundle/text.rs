//! Character facts every scan shares: which characters a reader cannot see, and text made safe to
//! show. A leaf: the flag scan and the grader-text detector both read it.

/// Whether `c` is invisible when rendered but still read by a model.
pub fn is_invisible(c: char) -> bool {
    matches!(u32::from(c),
        0x00AD            // soft hyphen
        | 0x034F          // combining grapheme joiner
        | 0x061C          // Arabic letter mark (bidi)
        | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // Hangul fillers
        | 0x180E          // Mongolian vowel separator
        | 0x200B..=0x200F // zero-width space/joiners, LRM, RLM
        | 0x202A..=0x202E // bidi embeddings and overrides
        | 0x2060..=0x2064 // word joiner, invisible operators
        | 0x2066..=0x2069 // bidi isolates
        | 0x206A..=0x206F // deprecated format characters
        | 0xFE00..=0xFE0E // variation selectors (FE0F stays: emoji presentation)
        | 0xFEFF          // zero-width no-break space (a BOM anywhere but the start)
        | 0xFFF9..=0xFFFB // interlinear annotation controls
        | 0x1D173..=0x1D17A // musical formatting controls
        | 0xE0000..=0xE007F // tag characters ("ASCII smuggling")
        | 0xE0100..=0xE01EF // variation selectors supplement
    )
}

/// Renders text safe for a terminal or a report: invisible and control characters are escaped.
pub fn display_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) || (c.is_control() && c != '\t') {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
