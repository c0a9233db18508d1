// Opens SVG files in headless Chromium (playwright-core, Debian's
// chromium) and checks that every text element lies inside the
// picture: its bounding box, as the browser lays it out with its own
// fonts, within the svg's width and height. Prints "FILE: N texts
// inside WIDTHxHEIGHT" for each, or "FILE: outside: TEXT (x0,y0)-(x1,y1)"
// for each one that is not, and exits 1 then.
// Usage: node svgfit.js FILE.svg...
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
	const exe = process.env.CHROMIUM || '/usr/bin/chromium';
	const browser = await chromium.launch({
		executablePath: exe,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	let bad = 0;
	try {
		const page = await browser.newPage({ viewport: { width: 2000, height: 1500 } });
		for (const f of process.argv.slice(2)) {
			await page.goto('file://' + path.resolve(f));
			const r = await page.evaluate(() => {
				const svg = document.documentElement;
				const w = Number(svg.getAttribute('width'));
				const h = Number(svg.getAttribute('height'));
				const s = svg.getBoundingClientRect();
				const out = [];
				const texts = Array.from(document.querySelectorAll('text'));
				for (const t of texts) {
					const b = t.getBoundingClientRect();
					const x0 = b.left - s.left, y0 = b.top - s.top;
					const x1 = x0 + b.width, y1 = y0 + b.height;
					if (x0 < -0.5 || y0 < -0.5 || x1 > w + 0.5 || y1 > h + 0.5)
						out.push(`${t.textContent} (${x0.toFixed(1)},${y0.toFixed(1)})-` +
							`(${x1.toFixed(1)},${y1.toFixed(1)})`);
				}
				return { w, h, n: texts.length, out };
			});
			if (r.out.length) {
				bad = 1;
				for (const o of r.out)
					console.log(`${f}: outside: ${o}`);
			} else {
				console.log(`${f}: ${r.n} texts inside ${r.w}x${r.h}`);
			}
		}
	} finally {
		await browser.close();
	}
	process.exit(bad);
}

main().catch((e) => {
	console.error(`svgfit.js: ${e.message.split('\n')[0]}`);
	process.exit(2);
});
