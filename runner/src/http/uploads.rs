//! Uploads: a bundle's or a pack's files (`POST /v1/trees`), and a manifest
//! (`POST /v1/manifests`), each held for the wallet that uploaded it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use skilltrial_core::bundle;
use skilltrial_core::manifest::Manifest;
use solana_signer::Signer;

use super::error::{Answer, Failure, too_large};
use super::extract::{blocking, private_json, session};
use super::intake::within_limit;
use crate::tree::{self, TreeLimits, TreeRefusal};
use crate::{App, api, worker};

/// A tree's limits, by the kind its upload names.
fn tree_limits(kind: &str) -> Answer<TreeLimits> {
    match kind {
        "bundle" => Ok(TreeLimits::bundle()),
        "pack" => Ok(TreeLimits::pack()),
        other => Err(Failure::invalid(format!(
            "?kind=`{other}`: upload a `bundle` or a `pack`"
        ))),
    }
}

/// The largest body of the tree upload at `uri`: its kind's, known before the body is read.
pub(crate) fn tree_body_limit(uri: &axum::http::Uri) -> Answer<usize> {
    let q = Query::<TreeQuery>::try_from_uri(uri)
        .map_err(|e| Failure::invalid(format!("the query is not ?kind=..&id=..: {e}")))?;
    tree_limits(q.kind.as_deref().unwrap_or_default()).map(|l| l.max_body())
}

#[derive(Debug, Deserialize)]
pub(crate) struct TreeQuery {
    kind: Option<String>,
    id: Option<String>,
}

pub(crate) async fn upload_tree(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<TreeQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let body = within_limit(body)?;
    let wallet = session(&app, &headers, &Method::POST).await?;
    let kind = q.kind.unwrap_or_default();
    let id = q.id;
    let limits = tree_limits(&kind)?;
    if body.len() > limits.max_body() {
        return Err(too_large(format!(
            "the body is {} bytes; a {} within `skilltrial validate`'s limits ({} files, {} bytes) takes at most {}",
            body.len(),
            limits.kind,
            limits.max_files,
            limits.max_total_bytes,
            limits.max_body()
        )));
    }
    // Read and decoded off the async threads, refused at the first entry over a limit.
    let files = blocking(move || tree::parse(&body, &limits))
        .await?
        .map_err(|refusal| match refusal {
            TreeRefusal::TooLarge(why) => too_large(why),
            TreeRefusal::Invalid(why) => Failure::invalid(why),
        })?;
    let app2 = Arc::clone(&app);
    let stored = blocking(move || -> Answer<api::Stored> {
        let count = files.len();
        match kind.as_str() {
            "bundle" => {
                let b = bundle::from_files(
                    files.clone(),
                    bundle::SourceKind::Folder,
                    &bundle::Limits::default(),
                )
                .map_err(|errors| {
                    Failure::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid",
                        format!(
                            "the bundle is rejected: {}",
                            errors
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                    )
                })?;
                let digest = app2
                    .store
                    .put_tree(
                        b.files
                            .iter()
                            .map(|f| (f.path.as_str(), f.bytes.as_slice())),
                    )
                    .map_err(Failure::internal)?;
                if digest != b.digest {
                    return Err(Failure::internal(format!(
                        "bundle digest {} stored as {digest}",
                        b.digest
                    )));
                }
                app2.publish(&digest).map_err(Failure::internal)?;
                app2.state()
                    .hold(&wallet, &digest.hex())
                    .map_err(Failure::internal)?;
                Ok(api::Stored {
                    kind,
                    digest: digest.hex(),
                    name: Some(b.name),
                    version: b.version,
                    files: count,
                })
            }
            "pack" => {
                let id = id.ok_or_else(|| {
                    Failure::invalid("a pack upload names its id: ?kind=pack&id=<name@version>")
                })?;
                let map = files.into_iter().collect();
                let pack = skilltrial_core::pack::from_files(&id, map).map_err(|e| {
                    Failure::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid",
                        format!("pack {id}: {e}"),
                    )
                })?;
                let digest = app2
                    .store
                    .put_tree(pack.files().iter().map(|(p, b)| (p.as_str(), b.as_slice())))
                    .map_err(Failure::internal)?;
                if digest != pack.hash {
                    return Err(Failure::internal(format!(
                        "pack {id} stored under another digest"
                    )));
                }
                // A pack is this wallet's to run, as a bundle is: its tasks and golden records
                // are the uploader's, and a hash alone must not run them.
                app2.publish(&digest).map_err(Failure::internal)?;
                app2.state()
                    .hold(&wallet, &digest.hex())
                    .map_err(Failure::internal)?;
                Ok(api::Stored {
                    kind,
                    digest: digest.hex(),
                    name: Some(id),
                    version: None,
                    files: count,
                })
            }
            other => Err(Failure::invalid(format!(
                "?kind=`{other}`: upload a `bundle` or a `pack`"
            ))),
        }
    })
    .await??;
    Ok(private_json(stored))
}

pub(crate) async fn upload_manifest(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let body = within_limit(body)?;
    let wallet = session(&app, &headers, &Method::POST).await?;
    let manifest: Manifest = serde_json::from_slice(&body)
        .map_err(|e| Failure::invalid(format!("the body is not a manifest: {e}")))?;
    let canonical = manifest
        .canonical()
        .map_err(|e| Failure::invalid(format!("the manifest cannot be hashed: {e}")))?;
    let app2 = Arc::clone(&app);
    let terms = blocking(move || -> Answer<api::Terms> {
        // Its pack and bundles are this wallet's to run only if this wallet uploaded them: a
        // manifest names them by digest, and a digest alone must not run another wallet's
        // skill or tasks.
        let held = |digest: &str| {
            let hex = skilltrial_engine::store::parse_hex(digest)
                .map_or_else(|| digest.to_owned(), |d| d.hex());
            app2.state()
                .holds(&wallet, &hex)
                .map_err(Failure::internal)
        };
        for arm in &manifest.arms {
            if let Some(b) = &arm.bundle
                && !held(&b.digest)?
            {
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!(
                        "the manifest's bundle `{}` ({}) was not uploaded by this wallet: upload it first (POST /v1/trees?kind=bundle; `submit` does)",
                        b.name, b.digest
                    ),
                ));
            }
        }
        if !held(&manifest.pack.hash)? {
            return Err(Failure::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "the manifest's pack `{}` ({}) was not uploaded by this wallet: upload it first (POST /v1/trees?kind=pack&id={}; `submit` and the page do)",
                    manifest.pack.id, manifest.pack.hash, manifest.pack.id
                ),
            ));
        }
        let hash = app2
            .store
            .put(canonical.as_bytes())
            .map_err(Failure::internal)?;
        app2.publish(&hash).map_err(Failure::internal)?;
        app2.state()
            .hold(&wallet, &hash.hex())
            .map_err(Failure::internal)?;
        let (inputs, terms) = worker::admit_manifest(&app2, &hash.hex(), worker::Admission::Before)
            .map_err(|e| Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e))?;
        let config = app2
            .chain()
            .config()
            .map_err(|e| {
                Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    e.to_string(),
                )
            })?
            .ok_or_else(|| {
                Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the program has no config on this cluster",
                )
            })?;
        let escrow = terms
            .escrow(config.fee_per_trial)
            .ok_or_else(|| Failure::invalid("the escrow overflows u64 lamports"))?;
        Ok(api::Terms {
            manifest: hash.hex(),
            trials: terms.planned_trials,
            per_request_cap_lamports: terms.per_request_cap.0,
            fee_per_trial_lamports: config.fee_per_trial,
            escrow_lamports: escrow,
            runner: app2.runner.pubkey().to_string(),
            min_deadline_secs: worker::min_deadline_secs(&inputs.manifest),
        })
    })
    .await??;
    Ok(private_json(terms))
}
