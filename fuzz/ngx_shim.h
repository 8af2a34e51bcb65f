
/*
 * The fuzz targets' own pool: every allocation is freed on destroy.
 */


#ifndef _NGX_SHIM_H_INCLUDED_
#define _NGX_SHIM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


ngx_pool_t *ngx_shim_pool_create(void);
void ngx_shim_pool_destroy(ngx_pool_t *pool);
u_char *ngx_shim_copy(ngx_pool_t *pool, const uint8_t *data, size_t size);
ngx_int_t ngx_shim_split(ngx_pool_t *pool, const uint8_t *data, size_t size,
    ngx_str_t *first, ngx_str_t *rest);


#endif /* _NGX_SHIM_H_INCLUDED_ */
