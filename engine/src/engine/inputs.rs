//! A run's inputs in the content store: [`save_inputs`] copies them in at `plan`;
//! [`load_pinned`] reads a manifest and its pack back by hash (what `recheck` and the report
//! need); [`load_inputs`] adds the bundles and refuses anything this binary would run
//! differently (another checker, another prompt template).

use std::collections::BTreeMap;

use skilltrial_core::bundle::{self, Bundle, SourceKind};
use skilltrial_core::checker;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::manifest::{self, Arm, Manifest};
use skilltrial_core::pack::{self, Pack};

use super::{EngineError, Refusal, short};
use crate::store::{Store, StoreError, parse_hex};

/// Everything a manifest names, loaded from the store and verified.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub hash: Sha256Digest,
    pub manifest: Manifest,
    pub pack: Pack,
    pub a: Option<Bundle>,
    pub b: Option<Bundle>,
    /// The other skills every progressive catalog lists (`--with-skills`), in pinned order.
    pub others: Vec<Bundle>,
}

impl Inputs {
    /// THE plan of these inputs ([`manifest::trials_with`]).
    pub fn trials(
        &self,
    ) -> Result<(Vec<manifest::PlannedTrial>, manifest::Totals), manifest::PlanError> {
        manifest::trials_with(
            &self.manifest,
            &self.pack,
            self.a.as_ref(),
            self.b.as_ref(),
            &self.others,
        )
    }
}

/// Copies the other skills a progressive plan lists (`--with-skills`) into the store, beside
/// what [`save_inputs`] copies.
pub fn save_bundles(store: &Store, bundles: &[Bundle]) -> Result<(), EngineError> {
    bundles.iter().try_for_each(|b| save_bundle(store, b))
}

fn save_bundle(store: &Store, bundle: &Bundle) -> Result<(), EngineError> {
    store.put_tree(
        bundle
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.bytes.as_slice())),
    )?;
    Ok(())
}

/// Copies every input of a manifest into the store; returns the manifest hash.
pub fn save_inputs(
    store: &Store,
    manifest: &Manifest,
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
) -> Result<Sha256Digest, EngineError> {
    let pack_hash = store.put_tree(pack.files().iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
    if pack_hash.to_string() != manifest.pack.hash {
        return Err(Refusal::PackDigestMismatch.into());
    }
    for bundle in [a, b].into_iter().flatten() {
        save_bundle(store, bundle)?;
    }
    let text = manifest
        .canonical()
        .map_err(|e| Refusal::ManifestUnhashable(e.to_string()))?;
    Ok(store.put(text.as_bytes())?)
}

/// Reads the manifest stored under `hash` and the pack it pins, each verified against its hash:
/// the manifest must be canonical (it hashes to its name), the pack must be the one it names.
/// Checks nothing about this binary (see [`load_inputs`] for that).
pub fn load_pinned(store: &Store, hash: &Sha256Digest) -> Result<(Manifest, Pack), EngineError> {
    let manifest = read_manifest(store, hash)?;
    let pack = read_pack(store, &manifest)?;
    Ok((manifest, pack))
}

fn read_manifest(store: &Store, hash: &Sha256Digest) -> Result<Manifest, EngineError> {
    let hash = *hash;
    let text = store.get(&hash).map_err(|e| match e {
        StoreError::Missing(_) => EngineError::Refused(Refusal::ManifestMissing(hash)),
        other => EngineError::Store(other),
    })?;
    let manifest: Manifest =
        serde_json::from_slice(&text).map_err(|e| Refusal::ManifestUnparsable {
            hash,
            message: e.to_string(),
        })?;
    let again = manifest
        .hash()
        .map_err(|e| Refusal::ManifestUnhashable(e.to_string()))?;
    if again != hash {
        return Err(Refusal::ManifestNotCanonical { hash, again }.into());
    }
    if manifest.format != manifest::FORMAT {
        return Err(Refusal::ManifestFormat {
            found: manifest.format.clone(),
        }
        .into());
    }
    Ok(manifest)
}

fn read_pack(store: &Store, manifest: &Manifest) -> Result<Pack, EngineError> {
    let pack_hash = parse_hex(&manifest.pack.hash).ok_or(Refusal::PackHashMalformed)?;
    let files: BTreeMap<String, Vec<u8>> = store.get_tree(&pack_hash)?.into_iter().collect();
    let pack = pack::from_files(&manifest.pack.id, files)
        .map_err(|e| Refusal::StoredPackInvalid(e.to_string()))?;
    if pack.hash != pack_hash || pack.id() != manifest.pack.id {
        return Err(Refusal::StoredPackMismatch {
            id: manifest.pack.id.clone(),
            hash: manifest.pack.hash.clone(),
        }
        .into());
    }
    Ok(pack)
}

/// Loads a manifest and everything it names from the store. Refuses when anything is missing,
/// differs from its hash, or when this binary's checker or prompt template is not the one the
/// manifest pins.
pub fn load_inputs(store: &Store, manifest_ref: &str) -> Result<Inputs, EngineError> {
    let hash = parse_hex(manifest_ref)
        .ok_or_else(|| Refusal::NotAManifestHash(manifest_ref.to_owned()))?;
    let manifest = read_manifest(store, &hash)?;
    // Before the pack is read: a binary that would run the manifest differently says so first.
    check_binary(&manifest)?;
    let pack = read_pack(store, &manifest)?;
    let (a, b, others) = load_bundles(store, &manifest)?;
    Ok(Inputs {
        hash,
        manifest,
        pack,
        a,
        b,
        others,
    })
}

/// A manifest's bundles: A, B, and the other skills its catalogs list.
pub type Pinned = (Option<Bundle>, Option<Bundle>, Vec<Bundle>);

/// The bundles a manifest pins (A, B and the other skills of its catalogs), from the store and
/// verified, whatever this binary would run: what a report of the run needs.
pub fn load_bundles(store: &Store, manifest: &Manifest) -> Result<Pinned, EngineError> {
    let mut bundles = [None, None];
    for spec in &manifest.arms {
        if let Some(reference) = &spec.bundle {
            let bundle = read_bundle(store, &reference.digest)?;
            match spec.arm {
                Arm::A => bundles[0] = Some(bundle),
                Arm::B => bundles[1] = Some(bundle),
                Arm::Baseline => return Err(Refusal::BaselineBundle.into()),
            }
        }
    }
    let others = manifest
        .delivery
        .iter()
        .flat_map(|d| d.with_skills.iter())
        .map(|reference| read_bundle(store, &reference.digest))
        .collect::<Result<Vec<_>, _>>()?;
    let [a, b] = bundles;
    Ok((a, b, others))
}

/// A pinned bundle from the store, verified against its digest.
fn read_bundle(store: &Store, digest: &str) -> Result<Bundle, EngineError> {
    let digest = parse_hex(digest).ok_or(Refusal::BundleDigestMalformed)?;
    let files = store.get_tree(&digest)?;
    let bundle = bundle::from_files(files, SourceKind::Folder, &bundle::Limits::default())
        .map_err(|e| Refusal::StoredBundleInvalid {
            digest,
            message: e.first().map(ToString::to_string).unwrap_or_default(),
        })?;
    if bundle.digest != digest {
        return Err(Refusal::StoredBundleMismatch {
            found: bundle.digest,
            digest,
        }
        .into());
    }
    Ok(bundle)
}

/// Refuses a manifest this binary would run differently than it was planned.
fn check_binary(manifest: &Manifest) -> Result<(), Refusal> {
    if manifest.checker.version != checker::CHECKER_VERSION
        || manifest.checker.source_sha256 != checker::source_sha256()
    {
        return Err(Refusal::CheckerMismatch {
            pinned: manifest.checker.version.clone(),
            pinned_source: short(&manifest.checker.source_sha256).to_owned(),
        });
    }
    // The template of the manifest's delivery mode, and for a progressive run the tools and the
    // turn limit this binary sends (inline: today's template, byte for byte).
    if manifest.check_delivery().is_err() {
        return Err(Refusal::TemplateMismatch);
    }
    Ok(())
}
