# Sourced by the scripts that download from package registries: retry ATTEMPTS
# COMMAND... runs COMMAND up to ATTEMPTS times, 5 s apart, and fails with its
# last status. A registry transfer that arrives damaged fails pip's own hash
# check ("THESE PACKAGES DO NOT MATCH THE HASHES"): a CI run lost 6 minutes and
# its result to one such transfer of a wheel whose published hash is correct.
retry() {
    local attempts=$1 tried=1 status
    shift
    while true; do
        "$@" && return 0
        status=$?
        if [ "$tried" -ge "$attempts" ]; then
            echo "error: failed $tried times: $*" >&2
            return "$status"
        fi
        echo "retrying in 5 s ($tried of $attempts failed): $*" >&2
        tried=$((tried + 1))
        sleep 5
    done
}
