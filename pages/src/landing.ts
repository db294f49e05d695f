// /landing/: the snippet names this server, so it can be copied as it is.
for (const node of document.querySelectorAll('[data-origin]')) node.textContent = location.origin;
