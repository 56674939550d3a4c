//! The deterministic dataset every server returns.
//!
//! All values come from [`Rng`] (splitmix64) with fixed seeds, so the data is
//! identical on every run and platform. Floating-point values are dyadic
//! (multiples of 1/4, 1/16 or 1/65536; float32 values only
//! multiples of 1/16 below 1000, whose shortest float32 and float64 decimal forms agree), so every language prints and parses them
//! identically. Other implementations do not regenerate this: they load
//! `contract/data/dataset.json`, which is written from here.

use serde::{Deserialize, Serialize};

use crate::pb::bench::{Device, DeviceState, InventoryStatus, Item, ItemCategory, Location, Person};

/// Number of devices in `GetInventoryM`.
pub const DEVICE_COUNT: usize = 480;
/// Number of items in `GetInventoryL`.
pub const ITEM_COUNT: usize = 1395;
/// Number of people in `GetObjects`.
pub const PEOPLE_COUNT: usize = 16;
/// The value `GetInteger` returns.
pub const INTEGER_VALUE: i32 = 2_147_483_647;
/// `GetIntegers` returns `0..INTEGER_COUNT`.
pub const INTEGER_COUNT: i32 = 10_000;
/// The files `GetFile` knows: name and size in bytes.
pub const FILES: [(&str, usize); 2] = [("file-455k", 455_000), ("file-3m4", 3_400_000)];

/// splitmix64: the contract's one pseudo-random generator (also used for the
/// failure draw, see `contract/README.md`).
#[derive(Debug, Clone)]
pub struct Rng(u64);

/// One splitmix64 output for input `x`.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = splitmix64(self.0);
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        out
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// A version-4-shaped UUID string.
    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            8 + (b >> 62),
            (b >> 48) & 0xfff,
            b & 0xffff_ffff_ffff
        )
    }
}

/// Everything the servers hold in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Dataset {
    /// `GetInventoryS`.
    pub inventory_status: InventoryStatus,
    /// `GetInventoryM`.
    pub devices: Vec<Device>,
    /// `GetInventoryL`.
    pub items: Vec<Item>,
    /// `GetObjects`.
    pub people: Vec<Person>,
    /// `GetFile`: built from the formula, not stored in `dataset.json`.
    #[serde(skip)]
    pub files: Vec<(String, Vec<u8>)>,
}

const WORDS: &[&str] = &[
    "anchor",
    "bracket",
    "cable",
    "damper",
    "engine",
    "flange",
    "gasket",
    "hinge",
    "insulator",
    "joint",
    "kettle",
    "lever",
    "module",
    "nozzle",
    "outlet",
    "piston",
    "quartz",
    "relay",
    "sensor",
    "turbine",
    "valve",
    "washer",
    "bearing",
    "coupler",
    "driver",
    "filter",
    "gauge",
    "housing",
    "inverter",
    "switch",
];
const ACCENTED: &[&str] = &[
    "smörgåsbord",
    "crème",
    "façade",
    "naïve",
    "Ærøskøbing",
    "Straße",
    "piñata",
    "𝒜lpha",
];
const ADJECTIVES: &[&str] = &[
    "Compact", "Heavy", "Light", "Smart", "Sealed", "Rugged", "Modular", "Precise",
];
const WAREHOUSES: &[&str] = &["WH-Stockholm", "WH-Goteborg", "WH-Malmo", "WH-Uppsala", "WH-Lund"];
const SUPPLIERS: &[&str] = &[
    "Nordic Parts AB",
    "Baltic Supply Ltd",
    "Kvarn Industri AB",
    "Lakeside Components",
];
const FIRST: &[&str] = &[
    "Alva", "Bo", "Cecilia", "David", "Elin", "Farid", "Greta", "Hugo", "Ines", "Jonas",
];
const LAST: &[&str] = &[
    "Andersson",
    "Berg",
    "Carlsson",
    "Dahl",
    "Ek",
    "Falk",
    "Holm",
    "Lind",
    "Nyberg",
    "Sund",
];

/// `len` characters of space-separated words (`accented_percent` of the
/// words non-ASCII), ending exactly at `len` Unicode scalar values.
pub fn words(seed: u64, len: usize, accented_percent: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::with_capacity(len + 16);
    let mut chars = 0;
    while chars < len {
        if chars > 0 {
            out.push(' ');
            chars += 1;
        }
        let word = if rng.chance(accented_percent) {
            *rng.pick(ACCENTED)
        } else {
            *rng.pick(WORDS)
        };
        for c in word.chars() {
            if chars == len {
                break;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

/// `len` ASCII letters and digits.
pub fn ascii(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = Rng::new(seed);
    (0..len)
        .map(|_| ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

/// The bytes of a `GetFile` file of `size` bytes: byte i = (i*131 + 7) mod 251.
pub fn file_bytes(size: usize) -> Vec<u8> {
    (0..size).map(|i| ((i as u64 * 131 + 7) % 251) as u8).collect()
}

/// A dyadic value `lo + k/denominator` with `k` in `0..steps`.
fn dyadic(rng: &mut Rng, lo: f64, steps: i64, denominator: f64) -> f64 {
    lo + rng.range(0, steps - 1) as f64 / denominator
}

impl Dataset {
    /// Generates the dataset (about 10 ms).
    pub fn generate() -> Dataset {
        let mut rng = Rng::new(0x5EED_0001);
        let recent_errors = (0..8)
            .map(|i| {
                format!(
                    "device {} timeout {} ms at {}",
                    &rng.uuid()[..8],
                    250 * (i + 1),
                    rng.pick(WAREHOUSES)
                )
            })
            .collect();
        let inventory_status = InventoryStatus {
            service_name: "inventory-service".into(),
            region_code: "eu-north-1".into(),
            status_message: "degraded: 8 devices reported errors in the last reporting window".into(),
            recent_errors,
            cpu_utilization: 0.625,
            memory_utilization: 0.40625,
            average_response_millis: 12.75,
            active_device_count: DEVICE_COUNT as i32,
        };

        let mut rng = Rng::new(0x5EED_0002);
        let devices = (0..DEVICE_COUNT)
            .map(|_| {
                let state = match rng.range(0, 99) {
                    0..=59 => DeviceState::Online,
                    60..=84 => DeviceState::Offline,
                    _ => DeviceState::Maintenance,
                };
                Device {
                    device_id: rng.uuid(),
                    state: state as i32,
                    reading_count: rng.range(16_384, 99_999) as i32,
                }
            })
            .collect();

        let mut rng = Rng::new(0x5EED_0003);
        let items = (0..ITEM_COUNT)
            .map(|i| {
                let quantity = rng.range(0, 400) as i32;
                let description = rng
                    .chance(80)
                    .then(|| words(0xD000 + i as u64, rng.range(20, 60) as usize, 0));
                Item {
                    id: rng.uuid(),
                    name: format!("{} {} {}", rng.pick(ADJECTIVES), rng.pick(WORDS), rng.range(100, 999)),
                    category: match rng.range(0, 99) {
                        0..=54 => ItemCategory::Electronics,
                        55..=74 => ItemCategory::Hardware,
                        75..=89 => ItemCategory::Supplies,
                        _ => ItemCategory::Tools,
                    } as i32,
                    unit_price: dyadic(&mut rng, 1.0, 65_536_000, 65_536.0),
                    weight_kg: dyadic(&mut rng, 0.125, 16_000, 16.0) as f32,
                    quantity,
                    in_stock: quantity > 0,
                    fragile: rng.chance(5),
                    location: Some(Location {
                        warehouse: (*rng.pick(WAREHOUSES)).into(),
                        aisle: rng.range(1, 40) as i32,
                        shelf: rng.range(1, 12) as i32,
                        bin: format!("B-{:02}-{}", rng.range(1, 60), rng.range(1, 9)),
                    }),
                    description,
                    supplier: Some((*rng.pick(SUPPLIERS)).into()),
                }
            })
            .collect();

        let mut rng = Rng::new(0x5EED_0004);
        let people = (0..PEOPLE_COUNT)
            .map(|i| {
                let first = *rng.pick(FIRST);
                let last = *rng.pick(LAST);
                Person {
                    id: i as i32 + 1,
                    first_name: first.into(),
                    last_name: last.into(),
                    email: format!("{}.{}{}@example.com", first.to_lowercase(), last.to_lowercase(), i + 1),
                    age: rng.range(19, 71) as i32,
                    active: rng.chance(75),
                    balance: dyadic(&mut rng, -500.0, 40_000, 4.0),
                }
            })
            .collect();

        let mut dataset = Dataset {
            inventory_status,
            devices,
            items,
            people,
            files: Vec::new(),
        };
        dataset.build_files();
        dataset
    }

    /// Fills `files` from the formula (after loading from JSON).
    pub fn build_files(&mut self) {
        self.files = FILES
            .iter()
            .map(|(name, size)| ((*name).to_owned(), file_bytes(*size)))
            .collect();
    }

    /// Loads `dataset.json` (as other implementations do) and builds the files.
    pub fn from_json(bytes: &[u8]) -> Result<Dataset, serde_json::Error> {
        let mut dataset: Dataset = serde_json::from_slice(bytes)?;
        dataset.build_files();
        Ok(dataset)
    }

    /// The `dataset.json` form (pretty-printed, stable).
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("dataset serializes");
        out.push(b'\n');
        out
    }

    /// The bytes of a file, by name.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_published_reference_values() {
        // Reference outputs of splitmix64 seeded with 1234567 (Vigna's C code).
        let mut rng = Rng::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn words_have_exactly_the_requested_length_in_scalar_values() {
        for len in [0, 1, 16, 361, 5000] {
            assert_eq!(words(7, len, 10).chars().count(), len);
        }
        assert!(!words(7, 361, 10).is_ascii());
    }

    #[test]
    fn dataset_round_trips_through_json() {
        let d = Dataset::generate();
        assert_eq!(Dataset::from_json(&d.to_json()).unwrap(), d);
    }

    #[test]
    fn float32_values_print_the_same_as_float32_and_as_float64() {
        // Languages without float32 (Python, JavaScript) print the widened
        // value; the contract's float32 data must read back identically.
        for item in Dataset::generate().items {
            let short = format!("{}", item.weight_kg);
            assert_eq!(short.parse::<f64>().unwrap(), f64::from(item.weight_kg), "{short}");
        }
    }

    #[test]
    fn file_bytes_follow_the_formula() {
        let f = file_bytes(300);
        assert_eq!(&f[..3], &[7, 138, 18]);
        assert_eq!(f[251], 7, "the pattern repeats every 251 bytes");
    }
}
