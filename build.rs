// `sqlx::migrate!` embeds the migration files at compile time: rebuild when
// one is added or changed (cargo does not watch the directories otherwise).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
