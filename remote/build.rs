//! Compiles the official `a2a.proto` (with the googleapis files it imports, and
//! `google.rpc.Status` for gRPC's error details) into the descriptor set the gRPC binding
//! reads its messages through.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(
        [
            "a2a.proto",
            "google/rpc/status.proto",
            "google/rpc/error_details.proto",
        ],
        ["proto"],
    )?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("a2a.bin");
    std::fs::write(out, prost::Message::encode_to_vec(&descriptors))?;
    Ok(())
}
