# Sourced by the scripts that start servers beside each other (benchmarks, scripts/lib/postgres.sh):
#   free_port    prints a TCP port on 127.0.0.1 that nothing listens on now
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
