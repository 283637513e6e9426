//! Placeholders for another driver (ADR 0015). An engine writes a statement
//! that runs on the caller's own connection with `$N` placeholders; this is
//! the one place that rewrites them into the placeholder style of the
//! caller's driver (PEP 249's `paramstyle`, plus asyncpg's `$N`), so no SQL
//! is written per driver anywhere else.

use crate::engine::sql::SqlValue;
use crate::error::{Error, Result};

/// A driver's placeholder style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamStyle {
    /// `?`, values in order of appearance (sqlite3).
    Qmark,
    /// `:1`, by position (PEP 249 `numeric`).
    Numeric,
    /// `$1`, by position (asyncpg, Postgres itself).
    Dollar,
    /// `%s`, values in order of appearance; a literal `%` is written `%%` (psycopg, Django).
    Format,
    /// `%(pN)s`, values by name; a literal `%` is written `%%` (psycopg with a mapping).
    Pyformat,
    /// `:pN`, values by name (SQLAlchemy `text()`).
    Named,
}

impl ParamStyle {
    /// The style a DB-API module names in its `paramstyle` attribute, or
    /// `"dollar"` for asyncpg.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "qmark" => ParamStyle::Qmark,
            "numeric" => ParamStyle::Numeric,
            "dollar" => ParamStyle::Dollar,
            "format" => ParamStyle::Format,
            "pyformat" => ParamStyle::Pyformat,
            "named" => ParamStyle::Named,
            other => {
                return Err(Error::Value(format!(
                    "paramstyle must be one of qmark, numeric, dollar, format, pyformat, named; got {other:?}"
                )))
            }
        })
    }

    /// Whether values are passed by name (`pN`) rather than by position.
    pub fn by_name(self) -> bool {
        matches!(self, ParamStyle::Pyformat | ParamStyle::Named)
    }
}

/// A statement ready for one driver.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    /// The text, in the driver's placeholder style.
    pub sql: String,
    /// The values: in order of appearance for `?` and `%s`, by position for
    /// `:N` and `$N`, and in `pN` order (the value of `$N` is `pN`) for the
    /// named styles.
    pub params: Vec<SqlValue>,
}

/// Rewrites every `$N` placeholder of `sql` (`N` from 1 to `params.len()`)
/// into `style`. Text inside single-quoted literals and double-quoted
/// identifiers is kept as it is, except that the `%`-styles double every `%`
/// (their drivers scan the whole text).
pub fn render(sql: &str, params: &[SqlValue], style: ParamStyle) -> Result<Rendered> {
    let percent = matches!(style, ParamStyle::Format | ParamStyle::Pyformat);
    let in_order = matches!(style, ParamStyle::Qmark | ParamStyle::Format);
    let mut out = String::with_capacity(sql.len() + 16);
    let mut ordered = Vec::new();
    let mut quote: Option<char> = None;
    // `$` inside an identifier (`col$1`, legal on Postgres) is no placeholder.
    let mut prev = ' ';
    let mut chars = sql.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        let after = std::mem::replace(&mut prev, c);
        if c == '%' && percent {
            out.push_str("%%");
            continue;
        }
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
                continue;
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
                continue;
            }
            None => {}
        }
        let starts_placeholder = c == '$'
            && !(after.is_alphanumeric() || after == '_')
            && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit());
        if !starts_placeholder {
            out.push(c);
            continue;
        }
        let mut n: usize = 0;
        while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
            n = n.saturating_mul(10).saturating_add(d as usize - '0' as usize);
            chars.next();
        }
        let value = n.checked_sub(1).and_then(|i| params.get(i)).ok_or_else(|| {
            Error::Value(format!("placeholder ${n} has no value: the statement has {} values", params.len()))
        })?;
        match style {
            ParamStyle::Qmark => out.push('?'),
            ParamStyle::Format => out.push_str("%s"),
            ParamStyle::Numeric => out.push_str(&format!(":{n}")),
            ParamStyle::Dollar => out.push_str(&format!("${n}")),
            ParamStyle::Pyformat => out.push_str(&format!("%(p{n})s")),
            ParamStyle::Named => out.push_str(&format!(":p{n}")),
        }
        if in_order {
            ordered.push(value.clone());
        }
    }
    if quote.is_some() {
        return Err(Error::Value("the statement ends inside a quoted literal".to_owned()));
    }
    Ok(Rendered { sql: out, params: if in_order { ordered } else { params.to_vec() } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals() -> Vec<SqlValue> {
        vec![SqlValue::Int(1), SqlValue::Text("q".into()), SqlValue::Null]
    }

    const SQL: &str = "SELECT $2::text, $1 + $1, '$1 100%', \"a$3\", b$1 WHERE x LIKE '%' AND y = $3";

    #[test]
    fn every_style_renders_the_placeholders_and_keeps_the_literals() -> Result<()> {
        let cases = [
            (ParamStyle::Qmark, "SELECT ?::text, ? + ?, '$1 100%', \"a$3\", b$1 WHERE x LIKE '%' AND y = ?"),
            (ParamStyle::Numeric, "SELECT :2::text, :1 + :1, '$1 100%', \"a$3\", b$1 WHERE x LIKE '%' AND y = :3"),
            (ParamStyle::Dollar, SQL),
            (ParamStyle::Format, "SELECT %s::text, %s + %s, '$1 100%%', \"a$3\", b$1 WHERE x LIKE '%%' AND y = %s"),
            (
                ParamStyle::Pyformat,
                "SELECT %(p2)s::text, %(p1)s + %(p1)s, '$1 100%%', \"a$3\", b$1 WHERE x LIKE '%%' AND y = %(p3)s",
            ),
            (ParamStyle::Named, "SELECT :p2::text, :p1 + :p1, '$1 100%', \"a$3\", b$1 WHERE x LIKE '%' AND y = :p3"),
        ];
        for (style, want) in cases {
            assert_eq!(render(SQL, &vals(), style)?.sql, want, "{style:?}");
        }
        Ok(())
    }

    #[test]
    fn positional_styles_repeat_values_in_order_of_appearance() -> Result<()> {
        let in_order = vec![SqlValue::Text("q".into()), SqlValue::Int(1), SqlValue::Int(1), SqlValue::Null];
        for style in [ParamStyle::Qmark, ParamStyle::Format] {
            assert_eq!(render(SQL, &vals(), style)?.params, in_order, "{style:?}");
        }
        for style in [ParamStyle::Numeric, ParamStyle::Dollar, ParamStyle::Pyformat, ParamStyle::Named] {
            assert_eq!(render(SQL, &vals(), style)?.params, vals(), "{style:?}");
            assert_eq!(style.by_name(), matches!(style, ParamStyle::Pyformat | ParamStyle::Named));
        }
        Ok(())
    }

    #[test]
    fn a_placeholder_without_a_value_or_an_open_literal_is_refused() {
        assert!(matches!(render("SELECT $4", &vals(), ParamStyle::Qmark), Err(Error::Value(m)) if m.contains("$4")));
        assert!(matches!(render("SELECT $0", &vals(), ParamStyle::Qmark), Err(Error::Value(_))));
        assert!(matches!(render("SELECT 'x", &vals(), ParamStyle::Qmark), Err(Error::Value(_))));
        assert!(matches!(ParamStyle::parse("percent"), Err(Error::Value(m)) if m.contains("qmark")));
        assert_eq!(ParamStyle::parse("pyformat").ok(), Some(ParamStyle::Pyformat));
    }
}
