#!/usr/bin/env bash
# Serve a document root with Apache's event MPM and the thread-safe PHP 8.3
# module (make php83-zts) with the extension loaded: one child process,
# THREADS threads, each request a PHP request on one of them — how
# FrankenPHP and threaded Apache run PHP.
#
#   scripts/apache-zts.sh start PORT DOCROOT [THREADS]   (default 8 threads)
#   scripts/apache-zts.sh graceful PORT
#   scripts/apache-zts.sh stop PORT
#
# Its configuration, php.ini and logs are in target/apache-zts/PORT/
# (error.log holds Apache's and PHP's errors). Extra php.ini lines can be
# given in INFER_APACHE_INI (one per line). The environment's INFER_* reach
# the scripts (getenv()). Apache runs its threads as www-data when started
# as root (it refuses to serve as root): the model files and the extension
# must be readable by that user.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
action=${1:?usage: apache-zts.sh start|graceful|stop PORT [DOCROOT [THREADS]]}
port=${2:?usage: apache-zts.sh start|graceful|stop PORT [DOCROOT [THREADS]]}
php_root=${INFER_PHP_ZTS_ROOT:-$here/target/php-8.3-zts}
ext=${INFER_EXTENSION:-$php_root/infer.so}
dir=$here/target/apache-zts/$port
conf=$dir/httpd.conf
modules=/usr/lib/apache2/modules

apache() {
    # Apache's own variables, which Debian's binary reads; nothing else of
    # this shell's environment but INFER_*.
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C \
        $(env | grep -E '^INFER_[A-Z_]+=' | tr '\n' ' ') \
        /usr/sbin/apache2 -f "$conf" "$@"
}

pid() {
    cat "$dir/httpd.pid" 2>/dev/null || true
}

case "$action" in
start)
    docroot=$(cd "${3:?usage: apache-zts.sh start PORT DOCROOT [THREADS]}" && pwd)
    threads=${4:-8}
    [ -f "$php_root/lib/apache2/libphp.so" ] || { echo "apache-zts.sh: no ZTS PHP module in $php_root (make php83-zts)" >&2; exit 1; }
    [ -f "$ext" ] || { echo "apache-zts.sh: no extension at $ext (make build PHP=8.3-zts)" >&2; exit 1; }
    mkdir -p "$dir"
    user=$(id -un)
    group=$(id -gn)
    if [ "$(id -u)" -eq 0 ]; then
        user=www-data
        group=www-data
    fi
    chown "$user:$group" "$dir" 2>/dev/null || true
    if [ "$user" != "$(id -un)" ]; then
        # The threads run as $user: what they open must be reachable by it.
        for file in "$ext" "$docroot" ${INFER_MODEL:+"$INFER_MODEL"} ${INFER_EMBEDDING_MODEL:+"$INFER_EMBEDDING_MODEL"}; do
            if ! setpriv --reuid="$user" --regid="$group" --clear-groups test -r "$file"; then
                echo "apache-zts.sh: $file is not readable by $user, whom Apache's threads run as (a directory above it closed to others?)" >&2
                exit 1
            fi
        done
    fi
    {
        printf 'extension=%s\n' "$ext"
        echo 'display_errors=stderr'
        echo 'log_errors=On'
        echo 'memory_limit=1G'
        printf '%s\n' "${INFER_APACHE_INI:-}"
    } >"$dir/php.ini"
    cat >"$conf" <<CONF
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:$port
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error.log"
LogLevel warn
LogFormat "%h %t \"%r\" %>s %b %D" timed
CustomLog "$dir/access.log" timed
User $user
Group $group
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule mime_module $modules/mod_mime.so
TypesConfig /etc/mime.types
LoadModule dir_module $modules/mod_dir.so
LoadModule env_module $modules/mod_env.so
LoadModule php_module "$php_root/lib/apache2/libphp.so"
# One child process, every request a thread of it (MaxRequestWorkers =
# ThreadsPerChild); room for a second only while a graceful restart lets
# the old one finish its requests.
ServerLimit 2
StartServers 1
ThreadLimit $threads
ThreadsPerChild $threads
MaxRequestWorkers $threads
MinSpareThreads 1
MaxSpareThreads $threads
MaxConnectionsPerChild 0
KeepAlive Off
Timeout 600
DocumentRoot "$docroot"
<Directory "$docroot">
    Require all granted
</Directory>
DirectoryIndex index.php
<FilesMatch "\.php$">
    SetHandler application/x-httpd-php
</FilesMatch>
PHPIniDir "$dir"
CONF
    # The INFER_* variables reach PHP's getenv().
    { env | grep -E '^INFER_[A-Z_]+=' || true; } | cut -d= -f1 | sed 's/^/PassEnv /' >>"$conf"
    if [ -n "$(pid)" ] && kill -0 "$(pid)" 2>/dev/null; then
        echo "apache-zts.sh: already running on port $port (pid $(pid))" >&2
        exit 1
    fi
    rm -f "$dir/httpd.pid" "$dir/error.log" "$dir/access.log"
    apache -t >/dev/null 2>"$dir/configtest.log" || { cat "$dir/configtest.log" >&2; exit 1; }
    apache -k start
    for _ in $(seq 1 100); do
        if [ -n "$(pid)" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "apache-zts.sh: serving $docroot on 127.0.0.1:$port, $threads threads (pid $(pid))"
            exit 0
        fi
        sleep 0.1
    done
    echo "apache-zts.sh: not answering on port $port; $dir/error.log:" >&2
    tail -20 "$dir/error.log" >&2 || true
    exit 1
    ;;
graceful)
    apache -k graceful 2>/dev/null
    ;;
stop)
    main=$(pid)
    [ -n "$main" ] || exit 0
    apache -k stop 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$main" 2>/dev/null || exit 0
        sleep 0.1
    done
    kill -KILL "$main" 2>/dev/null || true
    ;;
*)
    echo "apache-zts.sh: unknown action $action (start, graceful or stop)" >&2
    exit 2
    ;;
esac
