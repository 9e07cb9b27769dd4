// Tables: in memory (Table) and as a group of 1-D column datasets (Group::WriteTable / ReadTable).
#include "store/table.h"

#include <algorithm>

#include "core/error.h"
#include "store/group.h"
#include "store/h5_internal.h"

namespace pc::store {

DType ColumnType(const Table::Column& column) {
  return std::visit([](const auto& v) { return DTypeOf<typename std::decay_t<decltype(v)>::value_type>(); }, column);
}

int64_t ColumnSize(const Table::Column& column) {
  return std::visit([](const auto& v) { return static_cast<int64_t>(v.size()); }, column);
}

std::string Table::Where() const { return where_.empty() ? std::string("table") : where_; }

void Table::AddColumnVariant(const std::string& name, Column values) {
  detail::CheckName(Where(), "column", name);
  PC_CHECK(!Has(name), Where(), ": duplicate column '", name, "'");
  int64_t n = ColumnSize(values);
  PC_CHECK(names_.empty() || n == rows_, Where(), ": column '", name, "' has ", n, " rows, the other columns have ",
           rows_);
  names_.push_back(name);
  columns_.push_back(std::move(values));
  rows_ = n;
}

bool Table::Has(const std::string& name) const { return std::find(names_.begin(), names_.end(), name) != names_.end(); }

const Table::Column& Table::column(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  PC_CHECK(it != names_.end(), Where(), ": no column '", name, "' (columns: ", detail::NameList(names_), ")");
  return columns_[static_cast<size_t>(it - names_.begin())];
}

DType Table::type(const std::string& name) const { return ColumnType(column(name)); }

void Table::CheckType(const std::string& name, const Column& c, DType wanted) const {
  PC_CHECK(ColumnType(c) == wanted, Where(), ": column '", name, "' holds ", DTypeName(ColumnType(c)),
           " values, requested ", DTypeName(wanted));
}

Group Group::WriteTable(const std::string& name, const Table& table, const WriteOptions& options) const {
  Group g = CreateGroup(name);
  g.SetAttr("columns", table.column_names());
  g.SetAttr("rows", table.rows());
  for (const std::string& col : table.column_names()) {
    std::visit([&](const auto& v) { g.WriteVector(col, v, options); }, table.column(col));
  }
  return g;
}

Table Group::ReadTable(const std::string& name, const std::vector<std::string>& columns) const {
  Group g = OpenGroup(name);
  PC_CHECK(g.HasAttr("columns"), g.Where(), ": not a table (no 'columns' attribute)");
  auto stored = g.GetAttr<std::vector<std::string>>("columns");
  int64_t rows = g.GetAttr<int64_t>("rows");
  const std::vector<std::string>& wanted = columns.empty() ? stored : columns;
  Table table(g.Where());
  for (const std::string& col : wanted) {
    PC_CHECK(std::find(stored.begin(), stored.end(), col) != stored.end(), g.Where(), ": no column '", col,
             "' (columns: ", detail::NameList(stored), ")");
    DatasetInfo info = g.Info(col);
    PC_CHECK(info.shape.size() == 1 && info.shape[0] == rows, g.Where(), ": column '", col, "' has shape ",
             ShapeString(info.shape), ", the table has ", rows, " rows");
    switch (info.dtype) {
      case DType::kFloat64: table.AddColumnVariant(col, g.ReadVector<double>(col)); break;
      case DType::kFloat32: table.AddColumnVariant(col, g.ReadVector<float>(col)); break;
      case DType::kInt64: table.AddColumnVariant(col, g.ReadVector<int64_t>(col)); break;
      case DType::kInt32: table.AddColumnVariant(col, g.ReadVector<int32_t>(col)); break;
      case DType::kUInt8: table.AddColumnVariant(col, g.ReadVector<uint8_t>(col)); break;
      case DType::kString: table.AddColumnVariant(col, g.ReadVector<std::string>(col)); break;
      case DType::kBool: PC_ASSERT(false, "Info never returns kBool"); break;
    }
  }
  return table;
}

}  // namespace pc::store
