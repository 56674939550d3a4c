//! Numbers, sizes, durations and error chains for people: one home for
//! every renderer (terminal, CSV, Markdown, HTML, charts) and the CLI.

use std::time::Duration;

/// A duration in ns for people: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Bytes for people, in binary units: `512B`, `12.0KiB`, `34.5MiB`,
/// `1.25GiB`, `2.00TiB`. The unit is chosen after rounding, so a value never
/// prints as `1024B` or `1024.0KiB`. Every size printed goes through here.
pub fn fmt_bytes(b: f64) -> String {
    if b.is_nan() || b.abs().round() < 1024.0 {
        return format!("{b:.0}B");
    }
    let mut v = b / 1024.0;
    const UNITS: [(&str, usize); 4] = [("KiB", 1), ("MiB", 1), ("GiB", 2), ("TiB", 2)];
    for (i, (unit, digits)) in UNITS.iter().enumerate() {
        let text = format!("{v:.digits$}");
        let shown: f64 = text.parse().unwrap_or(v);
        if shown.abs() < 1024.0 || i == UNITS.len() - 1 {
            return format!("{text}{unit}");
        }
        v /= 1024.0;
    }
    unreachable!("the last unit returns")
}

/// A rate for people: `12,345` or `3.5`.
pub fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        let s = format!("{r:.0}");
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{r:.1}")
    }
}

/// A tick label: compact for big numbers, trimmed for small ones.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            .replace(".G", "G")
    } else if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.4}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A number as given, without a needless fraction: `1000`, `2.5`
/// (preset values such as a target rate in a point's label).
pub fn plain_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// A duration as a flag would give it: `10s` for whole seconds, else `250ms`.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// An error and its causes, `: `-separated (the form every message prints).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// How a column's cells line up in a [`TextTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right (text).
    Left,
    /// Padded on the left (numbers).
    Right,
}

/// A plain-text table for the terminal: the header, a rule of dashes (unless
/// [`TextTable::without_rule`]), then the rows. Each column is as wide as its
/// widest cell (in characters), columns are two spaces apart, and no line
/// ends in spaces. Every column is left-aligned unless [`TextTable::right`]
/// says otherwise.
///
/// ```
/// use protobench_model::format::TextTable;
///
/// let mut t = TextTable::new(["point", "rate"]).right([1]);
/// t.row(["grpc", "1.2k/s"]);
/// t.row(["rest-h2", "980/s"]);
/// assert_eq!(t.render(), "point      rate\n-------  ------\ngrpc     1.2k/s\nrest-h2   980/s\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextTable {
    header: Vec<String>,
    align: Vec<Align>,
    rule: bool,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// A table with these column headers, every column left-aligned.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> TextTable {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        TextTable {
            align: vec![Align::Left; header.len()],
            header,
            rule: true,
            rows: Vec::new(),
        }
    }

    /// Right-aligns the columns at these indices.
    pub fn right(mut self, columns: impl IntoIterator<Item = usize>) -> TextTable {
        for i in columns {
            if let Some(a) = self.align.get_mut(i) {
                *a = Align::Right;
            }
        }
        self
    }

    /// No rule under the header (listings whose first row is data to a script).
    pub fn without_rule(mut self) -> TextTable {
        self.rule = false;
        self
    }

    /// Adds a row (cells past the header's columns are left out).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as text, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let chars = |s: &String| s.chars().count();
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .chain([&self.header[i]])
                    .map(chars)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = " ".repeat(w.saturating_sub(chars(cell)));
                match self.align[i] {
                    Align::Left => {
                        s.push_str(cell);
                        s.push_str(&pad);
                    }
                    Align::Right => {
                        s.push_str(&pad);
                        s.push_str(cell);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.header);
        if self.rule {
            line(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>());
        }
        for row in &self.rows {
            line(row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmt_num_table() {
        let cases = [
            (0.0, "0"),
            (0.5, "0.5"),
            (12.5, "12.5"),
            (950.0, "950"),
            (15_000.0, "15k"),
            (2_500_000.0, "2.5M"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_num(v), want);
        }
    }

    #[test]
    fn human_units_table() {
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(12_300.0), "12.3µs");
        assert_eq!(fmt_ns(4_560_000.0), "4.56ms");
        assert_eq!(fmt_bytes(512.0), "512B");
        assert_eq!(fmt_bytes(12.0 * 1024.0), "12.0KiB");
        assert_eq!(fmt_rate(12_345.4), "12,345");
        assert_eq!(fmt_rate(3.46), "3.5");
        assert_eq!(plain_number(1000.0), "1000");
        assert_eq!(plain_number(2.5), "2.5");
        assert_eq!(fmt_duration(Duration::from_secs(10)), "10s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn fmt_bytes_table() {
        let k = 1024.0;
        let cases = [
            (0.0, "0B"),
            (512.0, "512B"),
            (1023.4, "1023B"),
            // Rounds to 1024: the next unit, never "1024B".
            (1023.6, "1.0KiB"),
            (k, "1.0KiB"),
            (1536.0, "1.5KiB"),
            (49_945.0, "48.8KiB"),
            (k * k - 1.0, "1.0MiB"),
            (1.5 * k * k, "1.5MiB"),
            (500_820.0, "489.1KiB"),
            (3.4e6, "3.2MiB"),
            (k * k * k, "1.00GiB"),
            (1.25 * k * k * k, "1.25GiB"),
            (2.0 * k * k * k * k, "2.00TiB"),
            (3.0 * k * k * k * k * k, "3072.00TiB"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_bytes(v), want, "{v}");
        }
    }

    #[test]
    fn error_chain_joins_causes() {
        let inner = std::io::Error::other("disk full");
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("saving the run")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(error_chain(&Outer(inner)), "saving the run: disk full");
    }
}
