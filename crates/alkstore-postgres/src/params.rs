//! The caller's SQL values (`SqlValue`) to and from Postgres wire values.
//!
//! The caller's statement is prepared first, so every parameter has the type
//! the server inferred for it; each value is then encoded for that type.
//! Text is sent in text format, which the server parses for whatever type
//! it declared (text, json, date, uuid, an enum…), so a str works wherever a
//! literal would. Numbers are encoded in binary for the integer and float
//! types, and as text for `numeric`. Anything else is refused with a
//! message naming the type. Results come back in binary; each supported
//! type maps to one `SqlValue` variant, an unsupported one is an error that
//! names the type and suggests a cast.

use std::error::Error as StdError;
use std::fmt;

use alkstore_core::SqlValue;
use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{to_sql_checked, Format, FromSql, IsNull, Kind, ToSql, Type};

type BoxError = Box<dyn StdError + Sync + Send>;

/// One parameter of the caller's statement.
#[derive(Debug)]
pub struct Param<'a>(pub &'a SqlValue);

fn kind_name(v: &SqlValue) -> &'static str {
    match v {
        SqlValue::Null => "None",
        SqlValue::Bool(_) => "bool",
        SqlValue::Int(_) => "int",
        SqlValue::Float(_) => "float",
        SqlValue::Text(_) => "str",
        SqlValue::Bytes(_) => "bytes",
    }
}

fn refuse(v: &SqlValue, ty: &Type) -> BoxError {
    format!(
        "cannot send a Python {} as Postgres type {}; cast the parameter in SQL (e.g. $1::{})",
        kind_name(v),
        ty.name(),
        match v {
            SqlValue::Int(_) => "bigint",
            SqlValue::Float(_) => "float8",
            SqlValue::Bool(_) => "boolean",
            SqlValue::Bytes(_) => "bytea",
            _ => "text",
        }
    )
    .into()
}

fn out_of_range(i: i64, ty: &Type) -> BoxError {
    format!("integer {i} is out of range for Postgres type {}", ty.name()).into()
}

/// Postgres' text spelling of a float for `numeric` input.
fn numeric_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        // Rust's Display never uses an exponent and round-trips the value.
        format!("{f}")
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let v = self.0;
        match v {
            SqlValue::Null => return Ok(IsNull::Yes),
            SqlValue::Text(s) => out.put_slice(s.as_bytes()),
            SqlValue::Bool(b) if *ty == Type::BOOL => out.put_u8(u8::from(*b)),
            SqlValue::Bytes(b) if *ty == Type::BYTEA => out.put_slice(b),
            SqlValue::Int(i) => match *ty {
                Type::INT8 => out.put_i64(*i),
                Type::INT4 => out.put_i32(i32::try_from(*i).map_err(|_| out_of_range(*i, ty))?),
                Type::INT2 => out.put_i16(i16::try_from(*i).map_err(|_| out_of_range(*i, ty))?),
                Type::OID => out.put_u32(u32::try_from(*i).map_err(|_| out_of_range(*i, ty))?),
                Type::FLOAT8 => out.put_f64(*i as f64),
                Type::FLOAT4 => out.put_f32(*i as f32),
                Type::NUMERIC => out.put_slice(i.to_string().as_bytes()),
                _ => return Err(refuse(v, ty)),
            },
            SqlValue::Float(f) => match *ty {
                Type::FLOAT8 => out.put_f64(*f),
                Type::FLOAT4 => out.put_f32(*f as f32),
                Type::NUMERIC => out.put_slice(numeric_text(*f).as_bytes()),
                _ => return Err(refuse(v, ty)),
            },
            _ => return Err(refuse(v, ty)),
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        // Every type is considered in `to_sql`, where the refusal can say
        // which value met which type.
        true
    }

    fn encode_format(&self, ty: &Type) -> Format {
        match self.0 {
            SqlValue::Text(_) => Format::Text,
            SqlValue::Int(_) | SqlValue::Float(_) if *ty == Type::NUMERIC => Format::Text,
            _ => Format::Binary,
        }
    }

    to_sql_checked!();
}

/// One result cell of the caller's query.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell(pub SqlValue);

/// A result type with no `SqlValue` counterpart.
#[derive(Debug)]
struct Unsupported(String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Postgres type {} is not supported in query results; cast the column in SQL \
             (e.g. ::text, ::float8 or ::bigint)",
            self.0
        )
    }
}

impl StdError for Unsupported {}

fn text(raw: &[u8]) -> Result<SqlValue, BoxError> {
    Ok(SqlValue::Text(std::str::from_utf8(raw)?.to_owned()))
}

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let v = match *ty {
            Type::INT2 => SqlValue::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => SqlValue::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => SqlValue::Int(i64::from_sql(ty, raw)?),
            Type::OID => SqlValue::Int(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => SqlValue::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => SqlValue::Float(f64::from_sql(ty, raw)?),
            Type::BOOL => SqlValue::Bool(bool::from_sql(ty, raw)?),
            Type::BYTEA => SqlValue::Bytes(raw.to_vec()),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::JSON | Type::UNKNOWN | Type::XML => {
                text(raw)?
            }
            // jsonb's binary form is a version byte (1) then the JSON text.
            Type::JSONB => match raw.split_first() {
                Some((1, rest)) => text(rest)?,
                _ => return Err("unsupported jsonb binary version".into()),
            },
            _ => match ty.kind() {
                // Enums travel as their label; citext (an extension type) as text.
                Kind::Enum(_) => text(raw)?,
                _ if ty.name() == "citext" => text(raw)?,
                _ => return Err(Box::new(Unsupported(ty.name().to_owned()))),
            },
        };
        Ok(Cell(v))
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxError> {
        Ok(Cell(SqlValue::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(v: &SqlValue, ty: &Type) -> Result<(Vec<u8>, bool), BoxError> {
        let mut out = BytesMut::new();
        let null = matches!(Param(v).to_sql(ty, &mut out)?, IsNull::Yes);
        Ok((out.to_vec(), null))
    }

    #[test]
    fn encodes_by_declared_type() -> Result<(), BoxError> {
        assert_eq!(encode(&SqlValue::Int(7), &Type::INT4)?.0, 7i32.to_be_bytes());
        assert_eq!(encode(&SqlValue::Int(7), &Type::INT8)?.0, 7i64.to_be_bytes());
        assert_eq!(encode(&SqlValue::Int(7), &Type::NUMERIC)?.0, b"7");
        assert_eq!(encode(&SqlValue::Float(0.5), &Type::NUMERIC)?.0, b"0.5");
        assert_eq!(encode(&SqlValue::Text("{\"a\": 1}".into()), &Type::JSONB)?.0, b"{\"a\": 1}");
        assert!(encode(&SqlValue::Null, &Type::UUID)?.1);
        assert!(encode(&SqlValue::Int(70_000), &Type::INT2).is_err());
        let e = encode(&SqlValue::Int(1), &Type::UUID).unwrap_err().to_string();
        assert!(e.contains("uuid"), "{e}");
        Ok(())
    }

    #[test]
    fn numeric_spelling() {
        assert_eq!(numeric_text(f64::NAN), "NaN");
        assert_eq!(numeric_text(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(numeric_text(1e-7), "0.0000001");
    }

    #[test]
    fn decodes_and_refuses() -> Result<(), BoxError> {
        assert_eq!(Cell::from_sql(&Type::INT2, &5i16.to_be_bytes())?.0, SqlValue::Int(5));
        assert_eq!(Cell::from_sql(&Type::JSONB, b"\x01[1]")?.0, SqlValue::Text("[1]".into()));
        assert_eq!(Cell::from_sql_null(&Type::INT4)?.0, SqlValue::Null);
        let e = Cell::from_sql(&Type::NUMERIC, b"").unwrap_err().to_string();
        assert!(e.contains("numeric"), "{e}");
        Ok(())
    }
}
