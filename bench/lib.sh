# Shared by the bench/ scripts: source it after parsing options.
#   bench_profile SCRIPT PROFILE   sets FLAG (cargo's profile flag) and BIN
#                                  (the protobench binary of that profile),
#                                  or exits 2 naming the script and the value
#   bench_build ARGS...            `cargo build` of that profile, niced so the
#                                  measurement that follows is not starved
#   bench_unknown SCRIPT OPTION ACCEPTED
#                                  the error for an option the script lacks
bench_profile() {
  case "$2" in
    release) FLAG=--release ;;
    debug) FLAG= ;;
    *) echo "$1: --profile must be release or debug, found $2" >&2; exit 2 ;;
  esac
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  PROFILE=$2
  BIN=$PWD/target/$PROFILE/protobench
}

bench_build() {
  echo "building ($PROFILE): cargo build $*" >&2
  nice -n 5 cargo build $FLAG -q "$@"
}

bench_unknown() {
  echo "$1: unknown option $2 (accepted: $3)" >&2
  exit 2
}
