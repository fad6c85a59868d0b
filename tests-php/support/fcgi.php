<?php
// A minimal FastCGI client (the responder role), enough to drive PHP-FPM from
// a test: one request per connection, the response's STDOUT returned whole
// (fcgi_get) or record by record as it arrives (fcgi_send, fcgi_next).

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

const FCGI_BEGIN_REQUEST = 1;
const FCGI_END_REQUEST = 3;
const FCGI_PARAMS = 4;
const FCGI_STDIN = 5;
const FCGI_STDOUT = 6;
const FCGI_STDERR = 7;

function fcgi_record(int $type, string $content, int $id = 1): string
{
    return pack('CCnnCC', 1, $type, $id, strlen($content), 0, 0) . $content;
}

function fcgi_pair(string $name, string $value): string
{
    $len = static fn (int $n): string => $n < 128 ? chr($n) : pack('N', $n | 0x80000000);
    return $len(strlen($name)) . $len(strlen($value)) . $name . $value;
}

/**
 * Open a connection to the FastCGI server at $host:$port and send one GET
 * request for $script with $query; read the response with fcgi_next().
 *
 * @return resource
 */
function fcgi_send(string $host, int $port, string $script, array $query, float $timeout = 60.0)
{
    $socket = @stream_socket_client("tcp://$host:$port", $errno, $error, 5.0);
    if ($socket === false) {
        throw new \RuntimeException("cannot connect to $host:$port: $error");
    }
    stream_set_timeout($socket, (int) ceil($timeout));
    $params = '';
    foreach ([
        'GATEWAY_INTERFACE' => 'CGI/1.1', 'REQUEST_METHOD' => 'GET', 'SCRIPT_FILENAME' => $script,
        'SCRIPT_NAME' => '/' . basename($script), 'QUERY_STRING' => http_build_query($query),
        'SERVER_PROTOCOL' => 'HTTP/1.1', 'SERVER_NAME' => 'localhost', 'SERVER_PORT' => '80',
        'REMOTE_ADDR' => '127.0.0.1', 'CONTENT_LENGTH' => '0',
    ] as $name => $value) {
        $params .= fcgi_pair($name, $value);
    }
    fwrite($socket, fcgi_record(FCGI_BEGIN_REQUEST, pack('nCx5', 1, 0))
        . fcgi_record(FCGI_PARAMS, $params) . fcgi_record(FCGI_PARAMS, '') . fcgi_record(FCGI_STDIN, ''));
    return $socket;
}

/**
 * The next record of the response on $socket, as it arrives: [type, content]
 * (FCGI_STDOUT, FCGI_STDERR), or null once the request has ended.
 *
 * @param resource $socket
 * @return array{int, string}|null
 */
function fcgi_next($socket): ?array
{
    $header = fread_exactly($socket, 8);
    $h = unpack('Cversion/Ctype/nid/nlength/Cpadding/Creserved', $header);
    $content = fread_exactly($socket, $h['length']);
    fread_exactly($socket, $h['padding']);
    return $h['type'] === FCGI_END_REQUEST ? null : [$h['type'], $content];
}

/**
 * Send one GET request for $script with $query to the FastCGI server at
 * $host:$port; return [stdout, stderr] of the response, or throw.
 */
function fcgi_get(string $host, int $port, string $script, array $query, float $timeout = 60.0): array
{
    return fcgi_read(fcgi_send($host, $port, $script, $query, $timeout));
}

/**
 * Read the whole response to the request sent on $socket and close it;
 * return [stdout, stderr], or throw.
 *
 * @param resource $socket
 * @return array{string, string}
 */
function fcgi_read($socket): array
{
    [$stdout, $stderr] = ['', ''];
    while (($record = fcgi_next($socket)) !== null) {
        [$type, $content] = $record;
        if ($type === FCGI_STDOUT) {
            $stdout .= $content;
        } elseif ($type === FCGI_STDERR) {
            $stderr .= $content;
        }
    }
    fclose($socket);
    // Drop the CGI headers.
    $body = ($at = strpos($stdout, "\r\n\r\n")) === false ? $stdout : substr($stdout, $at + 4);
    return [$body, $stderr];
}

function fread_exactly($socket, int $n): string
{
    $out = '';
    while (strlen($out) < $n) {
        $chunk = fread($socket, $n - strlen($out));
        if ($chunk === false || $chunk === '') {
            $meta = stream_get_meta_data($socket);
            throw new \RuntimeException($meta['timed_out'] ? 'FastCGI read timed out' : 'FastCGI connection closed early');
        }
        $out .= $chunk;
    }
    return $out;
}
