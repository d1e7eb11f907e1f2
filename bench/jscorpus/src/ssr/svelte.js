// Build-time server rendering with Svelte (bundled for Node by build.mjs).
import { render as renderSvelte } from 'svelte/server';
import App from '../svelte/App.svelte';

export const render = async (doc) => renderSvelte(App, { props: { doc } }).body;
