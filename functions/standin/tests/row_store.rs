//! The row store's contract (`standin::row::contract`) against the in-memory store the
//! rules' tests run on: what holds here holds on DynamoDB (`tests/`), checked by the
//! same code.

standin::row_store_contract!(standin::row::memory::MemoryStore::default());
