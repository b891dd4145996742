//! Pretty JSON whose size stays linear in the value's: serde_json's `PrettyFormatter` indents
//! each line by its depth, so a finding left unshrunk with an input nested 100,000 deep (a
//! hostile corner) would take gigabytes and minutes to write. This is the same layout with the
//! indentation capped at `MAX_LEVELS`.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// Levels of indentation at most; deeper lines are indented as much as this.
const MAX_LEVELS: usize = 32;
const INDENT: &[u8] = b"  ";

/// `value` as pretty JSON with the indentation capped.
pub fn to_vec(value: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, CappedPretty::default());
    value.serialize(&mut ser)?;
    Ok(out)
}

#[derive(Default)]
struct CappedPretty {
    level: usize,
    has_value: bool,
}

impl CappedPretty {
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }

    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.level.min(MAX_LEVELS) {
            w.write_all(INDENT)?;
        }
        Ok(())
    }
}

impl Formatter for CappedPretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn shallow_values_look_as_serde_json_prints_them() {
        let value = json!({"a": [1, {"b": []}, {}], "c": {"d": "e"}, "f": []});
        let ours = String::from_utf8(super::to_vec(&value).unwrap()).unwrap();
        assert_eq!(ours, serde_json::to_string_pretty(&value).unwrap());
    }

    #[test]
    fn deep_values_stay_linear_in_size() {
        const DEPTH: usize = 1_000;
        let mut value = json!(0);
        for _ in 0..DEPTH {
            value = json!([value]);
        }
        let bytes = super::to_vec(&value).unwrap();
        // Each level: a bracket pair and two line breaks, each line indented 64 bytes at most
        // (serde_json's own layout takes about DEPTH * DEPTH * 2 bytes here).
        assert!(bytes.len() < DEPTH * (4 + 2 * 64), "{}", bytes.len());
        let back = crate::protocol::json::parse_value(&bytes).unwrap();
        assert_eq!(back, value);
        crate::protocol::json::drop_value(back);
        crate::protocol::json::drop_value(value);
    }
}
