# Sourced by the scripts: tools on PATH, offline-friendly cargo-leptos.
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Leptos reads these at run time; cargo-leptos sets the same values.
export LEPTOS_OUTPUT_NAME=tollgate
