#!/usr/bin/env python3
"""Teach a copy of Rust's std sources about target_os = "solana".

std has no notion of Solana. For the sBPF build we compile std ourselves (-Z build-std) from a
copy of the nightly's rust-src, in which "solana" joins the platforms std already treats as
having no OS and no threads. Six places change:

  io errors ........ the generic (code-less) implementation
  thread locals .... the single-threaded implementation
  randomness ....... unsupported (programs have no entropy source)
  allocator ........ a System allocator that always fails; programs install their own
  RandomState ...... fixed zero keys (the per-thread key cache would be a writable static,
                     which sBPF forbids)
  build.rs ......... "solana" counts as a std-supported OS (else every crate is restricted_std)

Every edit is anchored on text next to an existing platform (zkvm / vexos / wasm64) and fails
loudly when the anchor is missing, so a nightly whose std moved is reported, not half-patched.

usage: patch-std.py <copy of .../rustlib/src/rust/library>
"""
import pathlib
import re
import sys

LIBRARY = pathlib.Path(sys.argv[1])
STD = LIBRARY / "std" / "src"


class AnchorMissing(SystemExit):
    pass


def rewrite(path: pathlib.Path, change, what: str) -> None:
    before = path.read_text()
    if '"solana"' in before and "already" not in what:
        print(f"{path.relative_to(LIBRARY)}: already patched")
        return
    after = change(before)
    if after == before:
        raise AnchorMissing(f"{path.relative_to(LIBRARY)}: anchor for {what} not found; this nightly's std moved")
    path.write_text(after)
    print(f"{path.relative_to(LIBRARY)}: {what}")


def add_after_zkvm_in_any(text: str) -> str:
    # The `any(...)` list that selects the generic io::Error implementation.
    match = re.search(r"any\(([^{}]*?target_os = \"zkvm\"[^{}]*?)\)\s*=>\s*\{\s*mod generic;", text, re.S)
    if not match:
        return text
    items = match.group(1).rstrip().rstrip(",")
    return text[: match.start(1)] + items + ', target_os = "solana"' + text[match.end(1):]


def duplicate_line(marker: str):
    def change(text: str) -> str:
        return re.sub(r"(\n(\s*)" + re.escape(marker) + r",\n)", r'\1\2target_os = "solana",\n', text)
    return change


FAILING_ALLOC_NEW = """use crate::alloc::Layout;

// Solana programs install their own #[global_allocator]; std's System allocator never serves.
#[inline]
pub unsafe fn alloc(_layout: Layout) -> *mut u8 {
    crate::ptr::null_mut()
}

#[inline]
pub unsafe fn dealloc(_ptr: *mut u8, _layout: Layout) {}

#[inline]
pub unsafe fn realloc(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
    unsafe { super::realloc_fallback(ptr, layout, new_size) }
}
"""

FAILING_ALLOC_OLD = """use crate::alloc::{GlobalAlloc, Layout, System};

// Solana programs install their own #[global_allocator]; std's System allocator never serves.
#[stable(feature = "alloc_system_type", since = "1.28.0")]
unsafe impl GlobalAlloc for System {
    #[inline]
    unsafe fn alloc(&self, _layout: Layout) -> *mut u8 {
        crate::ptr::null_mut()
    }

    #[inline]
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}
"""


def allocator(text: str) -> str:
    text = text.replace('    target_arch = "wasm64",\n)) {\n    16', '    target_arch = "wasm64",\n    target_arch = "bpf",\n)) {\n    16', 1)
    if 'target_arch = "bpf"' not in text:
        return text
    if "use zkvm as imp;" in text:
        text = text.replace(
            "        mod zkvm;\n        use zkvm as imp;\n    }",
            "        mod zkvm;\n        use zkvm as imp;\n    }\n    target_os = \"solana\" => {\n        mod solana;\n        use solana as imp;\n    }",
            1,
        )
        text = re.sub(
            r'(any\(target_os = "hermit", target_os = "solid_asp3", target_os = "uefi", target_os = "zkvm")\)',
            r'\1, target_os = "solana")',
            text,
            1,
        )
        body = FAILING_ALLOC_NEW
    else:
        text = text.replace(
            "    target_os = \"zkvm\" => {\n        mod zkvm;\n    }",
            "    target_os = \"zkvm\" => {\n        mod zkvm;\n    }\n    target_os = \"solana\" => {\n        mod solana;\n    }",
            1,
        )
        body = FAILING_ALLOC_OLD
    if "mod solana;" not in text:
        return ""  # anchor missing: rewrite() reports it
    (STD / "sys" / "alloc" / "solana.rs").write_text(body)
    return text


def random_state(text: str) -> str:
    head = "    pub fn new() -> RandomState {\n"
    if text.count(head) != 1:
        return text
    return text.replace(head, head + '        #[cfg(target_os = "solana")]\n        return RandomState { k0: 0, k1: 0 };\n', 1)


def build_rs(text: str) -> str:
    marker = '|| target_os == "zkvm"'
    if marker not in text:
        return text
    return text.replace(marker, marker + '\n        || target_os == "solana"', 1)


rewrite(STD / "sys" / "io" / "error" / "mod.rs", add_after_zkvm_in_any, "io errors: generic")
rewrite(STD / "sys" / "thread_local" / "mod.rs", duplicate_line('target_os = "zkvm"'), "thread locals: no threads")
rewrite(STD / "sys" / "random" / "mod.rs", duplicate_line('target_os = "vexos"'), "randomness: unsupported")
rewrite(STD / "sys" / "alloc" / "mod.rs", allocator, "allocator: always fails, MIN_ALIGN for bpf")
rewrite(STD / "hash" / "random.rs", random_state, "RandomState: zero keys")
rewrite(LIBRARY / "std" / "build.rs", build_rs, "build.rs: solana supported")
