//! An id as one segment of a URL path, as every client of the stand-in's own routes and
//! the push URL writes it.

/// `id` with every byte but ASCII letters, digits, `-` and `_` percent-encoded: one path
/// segment whatever it holds (`/`, `?`, `..` and spaces all escaped).
pub fn path_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 0xf)]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_one_segment_whatever_it_holds() {
        assert_eq!(path_segment("si-7_a"), "si-7_a");
        assert_eq!(path_segment("../agents"), "%2E%2E%2Fagents");
        assert_eq!(path_segment("a b?c"), "a%20b%3Fc");
        assert_eq!(path_segment("é"), "%C3%A9");
    }
}
