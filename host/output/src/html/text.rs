//! Text for the page: escaping, numbers for people, and JSON that is safe inside `<script>`.

use serde_json::Value;

/// JSON that cannot end its `<script>` element early: `</` would close it and `<!--` would
/// change how the rest of the element is parsed. Both only occur inside JSON strings, where
/// `\/` and `\u0021` are valid escapes, so the text still parses as the same JSON.
pub(super) fn script_json(value: &Value) -> String {
    value.to_string().replace("</", "<\\/").replace("<!--", "<\\u0021--")
}

/// A sentence with its first letter in capitals, for a line of its own.
pub(super) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Escape text for HTML content and quoted attribute values.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number for people: integers as such, others with precision that shrinks as they grow.
pub(super) fn num(v: f64) -> String {
    if !v.is_finite() {
        "–".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A count for people.
pub(super) fn count(n: u64) -> String {
    n.to_string()
}

pub(super) fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_and_script_json_cannot_break_out() {
        assert_eq!(esc(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        let value = serde_json::json!({ "path": "</script><!--" });
        let text = script_json(&value);
        assert!(!text.contains("</") && !text.contains("<!--"), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn numbers_keep_the_digits_people_need() {
        assert_eq!(
            [num(3.0), num(123.456), num(1.234), num(0.0123), num(f64::NAN)],
            ["3", "123.5", "1.23", "0.012", "–"]
        );
    }
}
