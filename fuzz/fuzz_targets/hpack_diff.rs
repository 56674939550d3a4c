//! The engine's HPACK decoder (crates/load/src/driver/hpack.rs) against an
//! independent one (loona-hpack) on the same header blocks: the same fields
//! or both refuse. The input is split at 0xFF 0xFF 0xFF into successive
//! blocks of one connection, so the dynamic table carries over. Known,
//! documented differences are normalised (docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobench_load::fuzzing::Hpack;

/// The engine's SETTINGS_HEADER_TABLE_SIZE; loona-hpack's default table.
const TABLE: usize = 4_096;

/// Our refusals that loona-hpack does not share, each required by RFC 7541
/// (docs/fuzzing.md, "Differential HPACK").
const STRICTER: &[&str] = &[
    // 4.2: a size update must come at the beginning of a block.
    "table size update after a field",
];

fuzz_target!(|data: &[u8]| {
    let mut ours = Hpack::new(TABLE);
    let mut theirs = loona_hpack::Decoder::new();
    // The limit size updates may not pass (RFC 7541 6.3): the peer's
    // SETTINGS_HEADER_TABLE_SIZE, 4,096 for the engine.
    theirs.set_max_allowed_table_size(TABLE);
    let mut filtered = Hpack::new(TABLE);
    for block in split(data) {
        let a = ours.decode(block);
        let b = theirs.decode(block);
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "different fields for {block:02x?}"),
            (Err(_), Err(_)) => return,
            // loona-hpack's own refusal that RFC 7541 does not ask for: a
            // block that ends with a size update (4.2 allows a block made
            // of nothing else).
            (Ok(_), Err(loona_hpack::decoder::DecoderError::SizeUpdateAtEnd)) => return,
            (Ok(x), Err(e)) => panic!("only loona-hpack refuses {block:02x?} ({e:?}); ours: {x:?}"),
            // Where RFC 7541 requires the refusal and loona-hpack is lenient.
            (Err(e), Ok(_)) if STRICTER.contains(e) => return,
            (Err(e), Ok(y)) => panic!("only ours refuses {block:02x?} ({e}); loona-hpack: {y:?}"),
        }
        // The engine skips values it does not want: the fields it does
        // want, and the table, must be the same.
        let wanted = |name: &[u8]| name.first() == Some(&b':') || name == b"content-type";
        let f = filtered
            .decode_wanted(block, wanted)
            .expect("the same block decoded unfiltered");
        let want: Vec<_> = a.as_ref().unwrap().iter().filter(|(n, _)| wanted(n)).collect();
        let got: Vec<_> = f.iter().filter(|(n, _)| wanted(n)).collect();
        assert_eq!(want, got, "filtering changed the wanted fields of {block:02x?}");
    }
});

fn split(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(data);
    std::iter::from_fn(move || {
        let r = rest?;
        match r.windows(3).position(|w| w == [0xff, 0xff, 0xff]) {
            Some(i) => {
                rest = Some(&r[i + 3..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}
