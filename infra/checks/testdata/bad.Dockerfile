# Deliberately wrong (the lint's self-test): an unpinned base, apt lists
# kept, recommends installed, root at run time.
FROM debian
RUN apt-get update && apt-get install -y chromium
ADD oxwright /usr/local/bin/oxwright
