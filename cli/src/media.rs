//! File extensions and media types, one table read both ways: a local file's media type
//! when it is sent (`--file`), a saved part's extension when its name has none.

/// Each extension with its media type; the first row of either wins when read backwards.
const TABLE: &[(&str, &str)] = &[
    ("txt", "text/plain"),
    ("md", "text/markdown"),
    ("csv", "text/csv"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("json", "application/json"),
    ("xml", "application/xml"),
    ("xml", "text/xml"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("svg", "image/svg+xml"),
];

/// The media type of a file name's extension, when it is a common one.
pub fn media_type_of(name: &str) -> Option<String> {
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(ext, _)| *ext == extension)
        .map(|(_, media_type)| (*media_type).to_owned())
}

/// The extension a file of this media type usually has (parameters ignored).
pub fn extension_of(media_type: &str) -> Option<&'static str> {
    let essence = media_type.split(';').next()?.trim().to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(_, media)| *media == essence)
        .map(|(ext, _)| *ext)
}
