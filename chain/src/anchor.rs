//! The memo that anchors a report on-chain (what `skilltrial anchor` sends): a top-level SPL Memo
//! v3 instruction (`MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr`, the id whose memos the RPC's
//! `getSignaturesForAddress` reports), signed by the wallet, whose bytes are
//!
//! `st1:<manifest hash, base58>:<report hash, base58>`
//!
//! — a version tag, then the two SHA-256 hashes of the report (`skilltrial verify` recomputes
//! both) in Solana's usual base58. Base58 keeps the memo at ≤ 93 bytes: the Memo program charges
//! about 360 CU per byte (docs/program.md), so two hex hashes would cost a third more.
//! Parsing is strict: exactly this shape, each hash exactly 32 bytes in its canonical base58, so
//! one anchor has one spelling.

use crate::{AccountMeta, Instruction, Pubkey};

/// SPL Memo v3 (what most call "v2"): the program anchors are sent to.
pub const MEMO_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/// The format's version tag.
pub const ANCHOR_TAG: &str = "st1";

/// The hashes an anchor memo carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnchorMemo {
    pub manifest_hash: [u8; 32],
    pub report_hash: [u8; 32],
}

/// Why memo bytes are not a SkillTrial anchor.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AnchorMemoError {
    #[error("the memo is not UTF-8 text")]
    NotText,
    #[error("the memo is not `{ANCHOR_TAG}:<manifest hash>:<report hash>`: {0}")]
    Shape(&'static str),
    #[error("the memo's {0} hash is not 32 bytes in canonical base58")]
    Hash(&'static str),
}

impl AnchorMemo {
    /// The memo's bytes.
    pub fn text(&self) -> String {
        format!(
            "{ANCHOR_TAG}:{}:{}",
            bs58::encode(self.manifest_hash).into_string(),
            bs58::encode(self.report_hash).into_string()
        )
    }

    /// Parses memo bytes, refusing anything but the one canonical spelling.
    pub fn parse(bytes: &[u8]) -> Result<Self, AnchorMemoError> {
        let text = std::str::from_utf8(bytes).map_err(|_| AnchorMemoError::NotText)?;
        let mut parts = text.split(':');
        let (Some(tag), Some(manifest), Some(report), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AnchorMemoError::Shape("not three fields separated by ':'"));
        };
        if tag != ANCHOR_TAG {
            return Err(AnchorMemoError::Shape("another tag or version"));
        }
        let hash = |field: &str, which: &'static str| -> Result<[u8; 32], AnchorMemoError> {
            let bytes: [u8; 32] = bs58::decode(field)
                .into_vec()
                .ok()
                .and_then(|v| v.try_into().ok())
                .ok_or(AnchorMemoError::Hash(which))?;
            // Leading zeros and other alternative spellings decode to the same bytes; only the
            // canonical one is an anchor.
            if bs58::encode(bytes).into_string() != field {
                return Err(AnchorMemoError::Hash(which));
            }
            Ok(bytes)
        };
        Ok(Self {
            manifest_hash: hash(manifest, "manifest")?,
            report_hash: hash(report, "report")?,
        })
    }

    /// The top-level Memo v3 instruction carrying this anchor, signed by `signer` (the memo
    /// program requires every account it is given to sign, and logs "Signed by" each).
    pub fn instruction(&self, signer: &Pubkey) -> Instruction {
        Instruction {
            program_id: MEMO_PROGRAM_ID,
            accounts: vec![AccountMeta::new_readonly(*signer, true)],
            data: self.text().into_bytes(),
        }
    }
}

/// SPL Memo v4 (`Memo4…`, the Pinocchio rewrite of the Memo program): `verify`
/// accepts an anchor sent through it, though `anchor` sends v3.
pub const MEMO_V4_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("Memo4c2pN8afCj432Lb7RMVKi9PbQnnW7ewFFaV3oAH");

/// What a memo transaction must show to anchor `memo` for `signer`, checked against its
/// `getTransaction` answer (base64 encoding), decoded with the project's own decoder. Returns
/// every way it falls short (nothing when it anchors).
pub fn check_transaction(
    result: &serde_json::Value,
    memo: &AnchorMemo,
    signer: &Pubkey,
) -> Vec<String> {
    let decoded = match skilltrial_core::solana::transaction::decode_response(result) {
        Ok(decoded) => decoded,
        Err(e) => return vec![format!("the transaction cannot be decoded: {e}")],
    };
    let mut problems = Vec::new();
    if !decoded.success {
        problems.push("the transaction failed on-chain (meta.err is set)".to_owned());
    }
    let expected = memo.text();
    let memo_ids = [MEMO_PROGRAM_ID.to_bytes(), MEMO_V4_PROGRAM_ID.to_bytes()];
    let key = |index: u8| decoded.account_keys.get(usize::from(index)).map(|a| a.0);
    // Top-level instructions only: the wire message's own, never an inner (CPI) one.
    let memos: Vec<&[u8]> = decoded
        .wire
        .instructions
        .iter()
        .filter(|ix| key(ix.program_index).is_some_and(|id| memo_ids.contains(&id)))
        .map(|ix| ix.data.as_slice())
        .collect();
    let signers: Vec<String> = decoded.signers().iter().map(ToString::to_string).collect();
    match memos.iter().find(|data| **data == expected.as_bytes()) {
        Some(_) => {}
        None if memos.is_empty() => {
            problems.push("it carries no top-level Memo instruction".to_owned());
        }
        None => {
            let said: Vec<String> = memos
                .iter()
                .map(|d| format!("{:?}", String::from_utf8_lossy(d)))
                .collect();
            problems.push(format!(
                "its memo says {}, the report's anchor is {expected:?}",
                said.join(", ")
            ));
        }
    }
    if !signers.contains(&signer.to_string()) {
        problems.push(format!(
            "it is signed by {}, not by {signer}",
            signers.join(", ")
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo() -> AnchorMemo {
        let mut manifest = [0u8; 32];
        manifest[31] = 1;
        AnchorMemo {
            manifest_hash: manifest,
            report_hash: [0xff; 32],
        }
    }

    #[test]
    fn an_anchor_round_trips_and_stays_compact() {
        let m = memo();
        let text = m.text();
        assert!(
            text.starts_with("st1:1111111111111111111111111111111"),
            "{text}"
        );
        assert!(text.len() <= 93, "{} bytes", text.len());
        assert_eq!(AnchorMemo::parse(text.as_bytes()), Ok(m));
        let ix = m.instruction(&Pubkey::new_from_array([7; 32]));
        assert_eq!(
            ix.program_id.to_string(),
            "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
        );
        assert_eq!(ix.data, text.as_bytes());
        assert_eq!(
            ix.accounts,
            [AccountMeta::new_readonly(
                Pubkey::new_from_array([7; 32]),
                true
            )]
        );
    }

    #[test]
    fn only_the_canonical_spelling_is_an_anchor() {
        let text = memo().text();
        let (_, rest) = text.split_once(':').unwrap();
        let (manifest, report) = rest.split_once(':').unwrap();
        let cases: [(String, AnchorMemoError); 7] = [
            (
                format!("st2:{rest}"),
                AnchorMemoError::Shape("another tag or version"),
            ),
            (
                format!("{text}:extra"),
                AnchorMemoError::Shape("not three fields separated by ':'"),
            ),
            (
                format!("st1:{manifest}"),
                AnchorMemoError::Shape("not three fields separated by ':'"),
            ),
            // One leading '1' more is another spelling of 33 bytes; one fewer is 31.
            (
                format!("st1:1{manifest}:{report}"),
                AnchorMemoError::Hash("manifest"),
            ),
            (
                format!("st1:{manifest}:{}", &report[..10]),
                AnchorMemoError::Hash("report"),
            ),
            (
                format!("st1:{manifest}:0{}", &report[1..]),
                AnchorMemoError::Hash("report"),
            ),
            (
                format!("st1:{manifest}:{report} "),
                AnchorMemoError::Hash("report"),
            ),
        ];
        for (given, error) in cases {
            assert_eq!(AnchorMemo::parse(given.as_bytes()), Err(error), "{given}");
        }
        assert_eq!(
            AnchorMemo::parse(&[0xff, 0xfe]),
            Err(AnchorMemoError::NotText)
        );
    }
}
